// The global event log on PostgreSQL (cluster.md, "Events"). `console_append` numbers events from the locked
// `event_sequencer` row until commit, so ids follow commit order without gaps; it runs autocommitted or sent with
// COMMIT, so a paused instance never holds the lock.
import pg from 'pg';
import { proposalOf, type BusEvent } from '../../bus/event.js';
import type { EventDraft, EventRow, EventStore } from '../state-store.js';
import { byKindsSql, kindsOf, type FilterKinds } from './event-kinds.js';
import type { Exec } from './exec.js';

/** The channel every append notifies, with the newest id it stored (cluster.md, Events: LISTEN/NOTIFY). */
export const EVENTS_CHANNEL = 'console_events';

/** Segment size for a retention bound: as the SQLite event log, a quarter of it within 100..100,000. */
export function segmentSizeOf(retention: number): number {
  return Math.min(100_000, Math.max(100, Math.ceil(retention / 4)));
}

/**
 * The events an append stored, from its drafts and the ids `console_append` gave them (null: dropped by its guard).
 * An encoded draft's (`tail`) carries its summary, detail and payload in its JSON only: read its row, not these fields.
 */
export function appendedEvents(drafts: readonly EventDraft[], ids: readonly (number | string | null)[]): (BusEvent | null)[] {
  return drafts.map((d, i): BusEvent | null => {
    const id = ids[i];
    if (id == null) return null;
    return { id: String(id), ts: d.ts, severity: d.severity, scope: d.scope, summary: d.summary, detail: d.detail, payload: d.payload };
  });
}

/** `console_append`'s arguments but the last: one array per column (see {@link appendArgs}) and the drafts' tokens. */
export type AppendColumns = [...(string | null)[][], (number | null)[]];

/** The columns of an append of `drafts` (made on the main thread, run where {@link runAppend} runs). */
export function appendColumns(drafts: readonly EventDraft[]): AppendColumns {
  return [...appendArgs(drafts), drafts.map((d) => d.token ?? null)];
}

/**
 * Runs one `console_append` of `columns` on `x`, then retention when a segment boundary was crossed (on `pool`: after
 * commit when `x` is a transaction). @returns each draft's id, null for one its guard dropped.
 * @throws PgFaultError for a fault of the database (exec.ts): it may have committed when the connection was lost.
 */
export async function runAppend(x: Exec, pool: Exec, retention: number, columns: AppendColumns, retryAfter: number | null): Promise<(number | null)[]> {
  const r = await x.q<{ ids: (string | null)[] }>(`SELECT console_append($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint) AS ids`, [
    ...columns,
    retryAfter,
  ]);
  const ids = idsOf(r);
  await pruneCrossed(x, pool, segmentSizeOf(retention), retention, ids, !x.inTransaction);
  return ids;
}

/** `console_append`'s answer: each event's id (int8[] comes as text), null for one its guard dropped. */
function idsOf(r: { rows: unknown[] }): (number | null)[] {
  return ((r.rows[0] as { ids: (string | null)[] | null }).ids ?? []).map((id) => (id == null ? null : Number(id)));
}

/** Retention after an append whose ids crossed a segment boundary; awaited when the append committed by itself. */
async function pruneCrossed(x: Exec, pool: Exec, segment: number, retention: number, ids: readonly (number | null)[], committed: boolean): Promise<void> {
  let first = 0;
  let last = 0;
  for (const id of ids) {
    if (id == null) continue;
    last = id;
    if (first === 0) first = id;
  }
  if (last > 0 && Math.floor(last / segment) > Math.floor((first - 1) / segment)) {
    // A refused prune is caught up by the next crossing (it deletes every id below its cutoff).
    if (committed) await pruneEvents(pool, last - retention).catch(() => undefined);
    else x.afterCommit(() => pruneEvents(pool, last - retention));
  }
}

/** The event log on PostgreSQL. @param x runs the appends (pool or transaction); `pool` runs retention and reads. */
export function pgEvents(x: Exec, pool: Exec, retention: number): EventStore {
  const segment = segmentSizeOf(retention);
  return {
    retention,
    append: async (drafts, retryAfter = null) => {
      if (drafts.length === 0) return [];
      return appendedEvents(drafts, await runAppend(x, pool, retention, appendColumns(drafts), retryAfter));
    },
    appendOnCommit: (drafts) => {
      if (drafts.length === 0) return Promise.resolve([]);
      const lists = appendArgs(drafts).map((list) => `ARRAY[${list.map((v) => (v === null ? 'NULL' : pg.escapeLiteral(v))).join(', ')}]::text[]`);
      // A write's events are not retried (its answer says it failed): no tokens.
      const events = x.onCommit(`SELECT console_append(${lists.join(', ')}, NULL::bigint[], NULL) AS ids`).then(async (r) => {
        const ids = idsOf(r);
        await pruneCrossed(x, pool, segment, retention, ids, true);
        return appendedEvents(drafts, ids);
      });
      // A caller that never awaits this (its transaction failed first) must not leave an unhandled rejection.
      events.catch(() => undefined);
      return events;
    },
    newSource: async () => (await x.q<{ n: number }>(`SELECT nextval('event_source_seq') AS n`)).rows[0]?.n as number,
    after: async (sinceId, limit, filter, upTo = Number.MAX_SAFE_INTEGER) => {
      const found = await kindsFor(x, filter);
      if (found !== null) return readKinds(x, found, sinceId, upTo, limit, 'ASC');
      const { text, values } = eventsAfterSql(sinceId, limit, filter, upTo);
      return rowsOf(await x.q(text, values));
    },
    newest: async (limit, filter) => {
      const found = await kindsFor(x, filter);
      if (found !== null) return (await readKinds(x, found, 0, Number.MAX_SAFE_INTEGER, limit, 'DESC')).reverse();
      const params: unknown[] = [];
      const where = filterSql(filter, params);
      params.push(limit);
      const rows = rowsOf(await x.q(`SELECT id, severity, scope, proposal_id AS "proposalId", data FROM events WHERE true${where} ORDER BY id DESC LIMIT $${params.length}`, params));
      return rows.reverse();
    },
    lastId: async () => (await x.q<{ last_id: number }>('SELECT last_id FROM event_sequencer WHERE id = 1')).rows[0]?.last_id ?? 0,
    count: async () => (await x.q<{ n: number }>('SELECT count(*) AS n FROM events')).rows[0]?.n ?? 0,
  };
}

/**
 * The statement of `EventStore.after`: up to `limit` events with `sinceId` < id ≤ `upTo` that pass
 * `filter`, ascending. The upper bound is written `id + 0 <= $2` so that it cannot be an index
 * condition: with it the planner, whose statistics trail a log that grows at its end, took the range
 * for a few rows and chose a bitmap scan of every row in it plus a sort (each page read every row
 * up to the head: on a log of 100,000 rows about 20 ms of the server's CPU a page, against 2).
 * Walking the primary key in id order stops at the limit.
 * @returns the text and its values, for `pg`'s query.
 */
export function eventsAfterSql(
  sinceId: number,
  limit: number,
  filter: { severities: readonly string[] | null; scopePrefix: string | null; proposalId?: string | null },
  upTo: number,
): { text: string; values: unknown[] } {
  const values: unknown[] = [sinceId, upTo];
  const where = filterSql(filter, values);
  values.push(limit);
  return { text: `SELECT id, severity, scope, proposal_id AS "proposalId", data FROM events WHERE id > $1 AND id + 0 <= $2${where} ORDER BY id LIMIT $${values.length}`, values };
}

/** Where each event's JSON (its body: without the id) is in {@link AppendColumns}. */
export const BODY_COLUMN = 3;

/** `console_append`'s arguments, one array per column; the JSON lacks the id, which the function puts first. */
function appendArgs(drafts: readonly EventDraft[]): (string | null)[][] {
  const severity: string[] = [];
  const scope: string[] = [];
  const proposal: (string | null)[] = [];
  const body: string[] = [];
  const guard: (string | null)[] = [];
  const end: (string | null)[] = [];
  for (const d of drafts) {
    severity.push(d.severity);
    scope.push(d.scope);
    proposal.push(proposalOf(d));
    // An encoded draft's JSON after its id and time was made on the job I/O thread (event-json.ts eventTail).
    body.push(d.tail !== undefined ? `{"ts":"${d.ts}",${d.tail}` : JSON.stringify({ ts: d.ts, severity: d.severity, scope: d.scope, summary: d.summary, detail: d.detail, payload: d.payload }));
    guard.push(d.guard?.job ?? null);
    end.push(d.guard?.end === undefined ? null : JSON.stringify(d.guard.end));
  }
  // `body` at BODY_COLUMN: the event append thread frames the stored events from it.
  return [severity, scope, proposal, body, guard, end];
}

/** Deletes the events with ids up to `upTo` (retention); nothing when `upTo` < 1. */
export async function pruneEvents(x: Exec, upTo: number): Promise<void> {
  if (upTo >= 1) await x.q('DELETE FROM events WHERE id <= $1', [upTo]);
}

/**
 * The (severity, scope) pairs to read a severity or scope filter through (event-kinds.ts); null when the read
 * walks the log instead: no such filter (every row passes), a job's events (their own index), or too many pairs.
 */
async function kindsFor(x: Exec, filter: { severities: readonly string[] | null; scopePrefix: string | null; proposalId?: string | null }): Promise<FilterKinds | null> {
  if (filter.proposalId != null || (filter.severities === null && filter.scopePrefix === null)) return null;
  return kindsOf(x, filter.severities, filter.scopePrefix);
}

/** Events of the pairs found in (`sinceId`, `upTo`], up to the head they hold for, `limit` of them in `order`. */
async function readKinds(x: Exec, { kinds, head }: FilterKinds, sinceId: number, upTo: number, limit: number, order: 'ASC' | 'DESC'): Promise<EventRow[]> {
  if (kinds.length === 0) return [];
  const { text, values } = byKindsSql(kinds, sinceId, Math.min(upTo, head), limit, order);
  return rowsOf(await x.q(text, values));
}

/** The list filters as SQL conditions, their values appended to `params`. */
function filterSql(filter: { severities: readonly string[] | null; scopePrefix: string | null; proposalId?: string | null }, params: unknown[]): string {
  let sql = '';
  if (filter.severities !== null) {
    params.push([...new Set(filter.severities)]);
    sql += ` AND severity = ANY($${params.length}::text[])`;
  }
  if (filter.scopePrefix !== null) {
    // A prefix LIKE, its wildcards escaped.
    params.push(`${filter.scopePrefix.replace(/[\\%_]/g, '\\$&')}%`);
    sql += ` AND scope LIKE $${params.length}::text ESCAPE '\\'`;
  }
  if (filter.proposalId != null) {
    params.push(filter.proposalId);
    sql += ` AND proposal_id = $${params.length}::text`;
  }
  return sql;
}

function rowsOf(r: { rows: unknown[] }): EventRow[] {
  return r.rows as EventRow[];
}
