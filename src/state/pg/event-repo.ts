/**
 * The global event log on PostgreSQL (issue 13, item 2; cluster.md, Events).
 *
 * Ids come from the one-row `event_sequencer`: the transaction that stores events takes its
 * block of ids with `UPDATE event_sequencer SET last_id = last_id + n RETURNING last_id`. The
 * row stays locked until that transaction commits or rolls back, so the next writer, on any
 * connection of any instance, waits and then reads the committed value: ids are assigned in
 * commit order, without gaps (a rollback gives its ids back), and a reader that has seen id N
 * has seen every smaller id. The price is that event writers are serialised from their
 * append to their commit: a write appends its events last.
 *
 * Retention as on SQLite (src/state/event-log.ts): at least `retention` newest events are kept
 * and at most a segment more. Ids have no gaps, so "the newest `retention`" is `id > last -
 * retention`; each time the ids cross a multiple of the segment size, the rows below that are
 * deleted in one statement, after the commit, outside the serialised section.
 */
import { proposalOf, type BusEvent } from '../../bus/event.js';
import type { Exec } from './exec.js';
import type { EventRow, EventStore } from '../state-store.js';

/** The channel every append notifies, with the newest id it stored (cluster.md, Events: LISTEN/NOTIFY). */
export const EVENTS_CHANNEL = 'console_events';

/** Segment size for a retention bound: the rule of the SQLite event log, a quarter of it within 100..100,000. */
export function segmentSizeOf(retention: number): number {
  return Math.min(100_000, Math.max(100, Math.ceil(retention / 4)));
}

/**
 * The event log on PostgreSQL.
 * @param x runs the appends (the pool, or a transaction).
 * @param pool runs retention after a commit, and the reads.
 * @param retention newest events kept at least (CONSOLE_EVENT_RETENTION).
 */
export function pgEvents(x: Exec, pool: Exec, retention: number): EventStore {
  const segment = segmentSizeOf(retention);
  return {
    retention,
    append: async (drafts) => {
      if (drafts.length === 0) return [];
      return x.atomic(async (y) => {
        const n = drafts.length;
        const last = (await y.q<{ last_id: number }>('UPDATE event_sequencer SET last_id = last_id + $1 WHERE id = 1 RETURNING last_id', [n])).rows[0]
          ?.last_id as number;
        const first = last - n + 1;
        const events: BusEvent[] = drafts.map((d, i) => ({
          id: String(first + i),
          ts: d.ts,
          severity: d.severity,
          scope: d.scope,
          summary: d.summary,
          detail: d.detail,
          payload: d.payload,
        }));
        await y.q('INSERT INTO events (id, severity, scope, proposal_id, data) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[])', [
          events.map((e) => e.id),
          events.map((e) => e.severity),
          events.map((e) => e.scope),
          drafts.map((d) => proposalOf(d)),
          events.map((e) => JSON.stringify(e)),
        ]);
        // Every instance's listener wakes once this commits (NOTIFY is sent at the commit).
        await y.q('SELECT pg_notify($1, $2)', [EVENTS_CHANNEL, String(last)]);
        if (Math.floor(last / segment) > Math.floor((first - 1) / segment)) y.afterCommit(() => pruneEvents(pool, last - retention));
        return events;
      });
    },
    after: async (sinceId, limit, filter, upTo = Number.MAX_SAFE_INTEGER) => {
      const params: unknown[] = [sinceId, upTo];
      const where = filterSql(filter, params);
      params.push(limit);
      return rowsOf(await x.q(`SELECT id, severity, scope, proposal_id AS "proposalId", data FROM events WHERE id > $1 AND id <= $2${where} ORDER BY id LIMIT $${params.length}`, params));
    },
    newest: async (limit, filter) => {
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

/** Deletes the events with ids up to `upTo` (retention); nothing when `upTo` < 1. */
export async function pruneEvents(x: Exec, upTo: number): Promise<void> {
  if (upTo >= 1) await x.q('DELETE FROM events WHERE id <= $1', [upTo]);
}

/** The list filters as SQL conditions, their values appended to `params`. */
function filterSql(filter: { severities: readonly string[] | null; scopePrefix: string | null; proposalId?: string | null }, params: unknown[]): string {
  let sql = '';
  if (filter.severities !== null) {
    params.push([...new Set(filter.severities)]);
    sql += ` AND severity = ANY($${params.length}::text[])`;
  }
  if (filter.scopePrefix !== null) {
    // left() and char_length() count characters, as SQLite's substr() and length() do.
    params.push(filter.scopePrefix);
    sql += ` AND left(scope, char_length($${params.length}::text)) = $${params.length}::text`;
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
