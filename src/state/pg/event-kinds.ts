// Filtered reads of the PostgreSQL event log through one index, `events_kind (severity, scope COLLATE "C", id)`
// (migration 7): the (severity, scope) pairs a filter admits are found by a loose scan of the index, then each
// pair's events after the page's start are merged in id order (Merge Append), so a read costs its page and the
// pairs, not the events it skips. The SQLite log keeps the same pairs in memory (sqlite/event-pairs.ts).
import { SEVERITIES } from '../../bus/event.js';
import { MAX_FILTER_PAIRS } from '../state-store.js';
import type { Exec } from './exec.js';

/** One (severity, scope) pair present in the log. */
export interface EventKind {
  readonly severity: string;
  readonly scope: string;
}

/**
 * The statement finding the pairs present in the log whose severity is one of `$1` and whose scope starts with
 * `$2`: for each severity, the first scope at or past the prefix, then each next one, while it has the prefix
 * (scopes in byte order, so those with the prefix are adjacent); at most `$3`.
 */
const KINDS_SQL = `
  WITH RECURSIVE k(severity, scope) AS (
    SELECT s.severity, f.scope FROM unnest($1::text[]) AS s(severity) CROSS JOIN LATERAL (
      SELECT e.scope COLLATE "C" AS scope FROM events e
      WHERE e.severity = s.severity AND e.scope COLLATE "C" >= $2::text
      ORDER BY e.scope COLLATE "C" LIMIT 1) f
    WHERE starts_with(f.scope, $2::text COLLATE "C")
    UNION ALL
    SELECT k.severity, n.scope FROM k CROSS JOIN LATERAL (
      SELECT e.scope COLLATE "C" AS scope FROM events e
      WHERE e.severity = k.severity AND e.scope COLLATE "C" > k.scope
      ORDER BY e.scope COLLATE "C" LIMIT 1) n
    WHERE starts_with(n.scope, $2::text COLLATE "C")
  )
  SELECT (SELECT last_id FROM event_sequencer WHERE id = 1) AS head, coalesce(array_agg(severity), '{}') AS severities,
    coalesce(array_agg(scope), '{}') AS scopes FROM (SELECT severity, scope FROM k LIMIT $3) found`;

/** The pairs a filter admits, and the newest id stored when they were read. */
export interface FilterKinds {
  readonly kinds: readonly EventKind[];
  /**
   * The log's head in the same snapshot: every event up to it is committed (ids follow commit order) and its pair
   * is among those read, so a page read after it must stop there; an event of a pair new since would be skipped.
   */
  readonly head: number;
}

/**
 * The pairs of the log that pass a filter of severities (null: any) and a scope prefix (null: any), with the head
 * they hold for; null when more than {@link MAX_FILTER_PAIRS} do (the caller walks the log with the filter instead).
 */
export async function kindsOf(x: Exec, severities: readonly string[] | null, scopePrefix: string | null): Promise<FilterKinds | null> {
  const { text, values } = kindsSql(severities, scopePrefix);
  const row = (await x.q<{ head: string | number | null; severities: string[]; scopes: string[] }>(text, values)).rows[0];
  if (row === undefined || row.severities.length > MAX_FILTER_PAIRS) return null;
  return { head: Number(row.head ?? 0), kinds: row.severities.map((severity, i) => ({ severity, scope: row.scopes[i] as string })) };
}

/** The statement of {@link kindsOf} and its values (tests read its plan). */
export function kindsSql(severities: readonly string[] | null, scopePrefix: string | null): { text: string; values: unknown[] } {
  return { text: KINDS_SQL, values: [[...new Set(severities ?? SEVERITIES)], scopePrefix ?? '', MAX_FILTER_PAIRS + 1] };
}

/**
 * The statement reading up to `limit` events of `kinds` with `sinceId` < id ≤ `upTo`, in id order (ascending,
 * or descending for the newest): one branch per pair on `events_kind`, merged. @returns text and values for `pg`.
 */
export function byKindsSql(kinds: readonly EventKind[], sinceId: number, upTo: number, limit: number, order: 'ASC' | 'DESC'): { text: string; values: unknown[] } {
  const values: unknown[] = [sinceId, upTo, limit];
  const branches = kinds.map((k) => {
    values.push(k.severity, k.scope);
    const n = values.length;
    return `(SELECT id, severity, scope, proposal_id AS "proposalId", data FROM events WHERE severity = $${n - 1}::text AND scope COLLATE "C" = $${n}::text AND id > $1 AND id <= $2 ORDER BY id ${order} LIMIT $3)`;
  });
  return { text: `SELECT * FROM (${branches.join(' UNION ALL ')}) u ORDER BY id ${order} LIMIT $3`, values };
}
