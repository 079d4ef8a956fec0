// Reads of the event log's segments (event-log.ts), newest segment last: after an id, and the newest, with the list
// filters. A proposal's events come from its runs; a severity or scope filter from the pairs' ids when few pairs pass.
import type { Statement } from './binding.js';
import type { Db } from './db.js';
import type { EventFilter } from '../../bus/event.js';
import { frameOf } from '../../bus/frames.js';
import type { EventRow } from '../../bus/local-event-log.js';
import type { Segment } from './event-segments.js';

/** A row's frame (bus/frames.ts frameOf) in SQL: an integer id is written as JavaScript writes it. */
export const FRAME_SQL = `'id: ' || id || char(10) || 'data: ' || data || char(10, 10)`;

/** The reads, with their statements prepared once per segment and query shape. */
export class SegmentReads {
  private readonly selects = new Map<string, Statement<unknown[]>>();

  constructor(private readonly db: Db) {}

  /** Events with `sinceId < id <= upTo` that pass `filter`, ascending, at most `limit`, with their served JSON. */
  after(segments: readonly Segment[], sinceId: number, limit: number, filter: EventFilter, upTo: number): EventRow[] {
    const { sql, args } = where(filter);
    const out: EventRow[] = [];
    const byPairs = filter.proposalId == null && (filter.severities !== null || filter.scopePrefix !== null);
    for (const seg of segments) {
      if (seg.count === 0 || seg.maxId <= sinceId || seg.minId > upTo) continue;
      const ids = byPairs ? seg.pairs.after(filter, sinceId, upTo, limit - out.length) : null;
      const rows =
        ids !== null
          ? ids.length === 0
            ? []
            : seg.byIds.all(JSON.stringify(ids))
          : filter.proposalId == null
            ? this.select(seg, `after${sql}`, () => `SELECT id, severity, scope, data FROM ${seg.table} e WHERE id > ? AND id <= ?${sql} ORDER BY id ASC LIMIT ?`).all(
                sinceId,
                upTo,
                ...args,
                limit - out.length,
              )
            : // The proposal's runs that end after sinceId, in id order, and their rows.
              this.select(
                seg,
                `after-runs${sql}`,
                () =>
                  `SELECT e.id, e.severity, e.scope, e.data FROM ${seg.runs} r CROSS JOIN ${seg.table} e ON e.id BETWEEN r.first_id AND r.last_id
               WHERE r.proposal_id = ? AND r.last_id > ? AND r.first_id <= ? AND e.id > ? AND e.id <= ?${sql}
               ORDER BY r.last_id ASC, e.id ASC LIMIT ?`,
              ).all(filter.proposalId, sinceId, upTo, sinceId, upTo, ...args, limit - out.length);
      out.push(...(rows as EventRow[]));
      if (out.length >= limit) break;
    }
    return out;
  }

  /**
   * {@link after}'s events as Server-Sent Events frames (bus/frames.ts), one string per event, as a stream's replay
   * sends them. SQLite writes each frame (no row object: about half the cost of rows framed here), but for a
   * proposal's events and the few rows a rare severity or scope pair names, which are framed here.
   */
  framesAfter(segments: readonly Segment[], sinceId: number, limit: number, filter: EventFilter, upTo: number): string[] {
    if (filter.proposalId != null) return this.after(segments, sinceId, limit, filter, upTo).map(frameOf);
    const { sql, args } = where(filter);
    const byPairs = filter.severities !== null || filter.scopePrefix !== null;
    let out: string[] = [];
    for (const seg of segments) {
      if (seg.count === 0 || seg.maxId <= sinceId || seg.minId > upTo) continue;
      const ids = byPairs ? seg.pairs.after(filter, sinceId, upTo, limit - out.length) : null;
      let got: string[];
      if (ids === null) {
        const stmt = this.select(seg, `after-frames${sql}`, () => `SELECT ${FRAME_SQL} FROM ${seg.table} e WHERE id > ? AND id <= ?${sql} ORDER BY id ASC LIMIT ?`, true);
        got = stmt.all(sinceId, upTo, ...args, limit - out.length) as string[];
      } else got = ids.length === 0 ? [] : (seg.byIds.all(JSON.stringify(ids)) as EventRow[]).map(frameOf);
      out = out.length === 0 ? got : out.concat(got);
      if (out.length >= limit) break;
    }
    return out;
  }

  /** The newest `limit` events that pass `filter`, in ascending id order. */
  newest(segments: readonly Segment[], limit: number, filter: EventFilter): EventRow[] {
    const { sql, args } = where(filter);
    const out: EventRow[] = [];
    const byPairs = filter.proposalId == null && (filter.severities !== null || filter.scopePrefix !== null);
    for (let k = segments.length - 1; k >= 0 && out.length < limit; k--) {
      const seg = segments[k] as Segment;
      if (seg.count === 0) continue;
      const ids = byPairs ? seg.pairs.newest(filter, limit - out.length) : null;
      if (ids !== null) {
        if (ids.length > 0) out.push(...(seg.byIds.all(JSON.stringify(ids)) as EventRow[]).reverse());
        continue;
      }
      const rows =
        filter.proposalId == null
          ? this.select(seg, `newest${sql}`, () => `SELECT id, severity, scope, data FROM ${seg.table} e WHERE 1${sql} ORDER BY id DESC LIMIT ?`).all(...args, limit - out.length)
          : this.select(
              seg,
              `newest-runs${sql}`,
              () =>
                `SELECT e.id, e.severity, e.scope, e.data FROM ${seg.runs} r CROSS JOIN ${seg.table} e ON e.id BETWEEN r.first_id AND r.last_id
               WHERE r.proposal_id = ?${sql} ORDER BY r.last_id DESC, e.id DESC LIMIT ?`,
            ).all(filter.proposalId, ...args, limit - out.length);
      out.push(...(rows as EventRow[]));
    }
    return out.reverse();
  }

  /** Forgets the statements of a dropped segment table. */
  forget(table: string): void {
    for (const key of [...this.selects.keys()]) if (key.startsWith(`${table}|`)) this.selects.delete(key);
  }

  /** Forgets every statement (the segments were reopened). */
  clear(): void {
    this.selects.clear();
  }

  /** @param pluck the statement returns its first column's values, not row objects. */
  private select(seg: Segment, shape: string, build: () => string, pluck = false): Statement<unknown[]> {
    const key = `${seg.table}|${shape}`;
    let stmt = this.selects.get(key);
    if (!stmt) {
      stmt = this.db.prepare<unknown[]>(build());
      if (pluck) stmt.pluck(true);
      this.selects.set(key, stmt);
    }
    return stmt;
  }
}

/** The severity and scope filters' SQL on the segment table aliased `e` (the runs joins name two tables). */
function where(filter: EventFilter): { sql: string; args: (string | number)[] } {
  let sql = '';
  const args: (string | number)[] = [];
  if (filter.severities !== null) {
    const sev = [...new Set(filter.severities)];
    sql += ` AND e.severity IN (${sev.map(() => '?').join(', ')})`;
    args.push(...sev);
  }
  if (filter.scopePrefix !== null) {
    // length() and substr() both count code points, so non-ASCII prefixes match exactly.
    sql += ' AND substr(e.scope, 1, length(?)) = ?';
    args.push(filter.scopePrefix, filter.scopePrefix);
  }
  return { sql, args };
}
