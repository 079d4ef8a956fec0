// Bus events in the state database (api-decisions.md, "Events"), in a ring of segment tables: retention drops the
// oldest whole, as deleting rows one by one blocks the event loop. The view `events` unites them for outside readers.
import type { Db } from './db.js';
import type { EventFilter } from '../../bus/event.js';
import type { EventRow, LocalEventLog } from '../../bus/local-event-log.js';
import { SegmentReads } from './event-reads.js';
import { COLUMNS, createSegment, INSERT_CHUNK, openSegment, pairsOf, type Segment, segmentNumbers, upgradeSegments } from './event-segments.js';

export type { EventRow } from '../../bus/local-event-log.js';

/** Ids come from blocks reserved in `meta` before use, so an id a client saw is never reused after a crash (at the price of a gap). */
const ID_BLOCK = 10_000;
/** Segments hold a quarter of the retention bound each (within these limits). */
const SEGMENTS_PER_RETENTION = 4;
const SEGMENT_MIN = 100;
const SEGMENT_MAX = 100_000;

/** The SQLite event log: the bus's {@link LocalEventLog}. */
export class EventLog implements LocalEventLog {
  private nextId: number;
  private reservedUpTo: number;
  private reservationUnsaved = false;
  private lastId: number;
  private readonly segments: Segment[];
  /** Rows per segment. */
  readonly segmentSize: number;
  private readonly saveReservation;
  private readonly appendTx;
  private readonly finishJob;
  private readonly reads: SegmentReads;

  /** @param retention newest events kept at least; at most a segment more are kept. */
  constructor(
    private readonly db: Db,
    readonly retention: number,
  ) {
    this.segmentSize = Math.min(SEGMENT_MAX, Math.max(SEGMENT_MIN, Math.ceil(retention / SEGMENTS_PER_RETENTION)));
    this.segments = [];
    this.reads = new SegmentReads(db);
    upgradeSegments(db);
    this.reload();

    const reserved = Number((db.prepare(`SELECT value FROM meta WHERE key = 'event_id_reserved'`).get() as { value: string } | undefined)?.value ?? 0);
    const maxId = Math.max(0, ...this.segments.map((s) => s.maxId));
    this.reservedUpTo = Math.max(reserved, maxId);
    this.nextId = this.reservedUpTo + 1;
    this.lastId = maxId;
    this.saveReservation = db.prepare(`INSERT INTO meta (key, value) VALUES ('event_id_reserved', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
    this.finishJob = db.prepare(
      `UPDATE jobs SET state = ?, ended_at = ?, rc = ?, signal = ?, stdout_lines = ?, stderr_lines = ?, exit_reason = ?, exit_detail = ?
       WHERE proposal_id = ? AND state = 'running'`,
    );
    this.appendTx = db.transaction((all: readonly EventRow[]): readonly EventRow[] | null => {
      if (this.reservationUnsaved) this.saveReservation.run(String(this.reservedUpTo));
      const rows = this.applyJobEnds(all);
      let i = 0;
      while (i < rows.length) {
        let seg = this.segments[this.segments.length - 1] as Segment;
        if (seg.count >= this.segmentSize) seg = this.rotate();
        const take = Math.min(rows.length - i, this.segmentSize - seg.count);
        this.insertInto(seg, rows, i, i + take);
        i += take;
      }
      this.applyRetention();
      return rows === all ? null : rows;
    });
  }

  /** Writes each row's job end (JobGuard) only over `running`, in the append's transaction, dropping rows whose job
   * is not running; @returns `rows` itself when none was dropped (the hot path allocates nothing). */
  private applyJobEnds(rows: readonly EventRow[]): readonly EventRow[] {
    let kept: EventRow[] | null = null;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i] as EventRow;
      const g = r.guard;
      if (g?.end !== undefined) {
        const e = g.end;
        if (this.finishJob.run(e.state, e.endedAt, e.rc, e.signal, e.stdoutLines, e.stderrLines, e.exitReason, e.exitDetail, g.job).changes === 0) {
          kept ??= rows.slice(0, i);
          continue;
        }
      }
      kept?.push(r);
    }
    return kept ?? rows;
  }

  /** Starts a new newest segment (inside the append transaction). */
  private rotate(): Segment {
    const last = this.segments[this.segments.length - 1] as Segment;
    const seg = createSegment(this.db, last.n + 1);
    this.segments.push(seg);
    this.rebuildView();
    return seg;
  }

  /** Drops the oldest segments while the others still hold `retention` events. */
  private applyRetention(): void {
    let total = this.size;
    let dropped = false;
    while (this.segments.length > 1 && total - (this.segments[0] as Segment).count >= this.retention) {
      const oldest = this.segments.shift() as Segment;
      total -= oldest.count;
      this.db.exec(`DROP VIEW IF EXISTS events; DROP TABLE ${oldest.table}; DROP TABLE IF EXISTS ${oldest.runs}`);
      this.reads.forget(oldest.table);
      dropped = true;
    }
    if (dropped) this.rebuildView();
    // Segments made under a larger bound (before a restart) can hold more: trim the oldest by rows, once.
    const excess = total - this.retention - this.segmentSize;
    if (excess > 0) {
      const oldest = this.segments[0] as Segment;
      const cutoff = this.db.prepare(`SELECT id FROM ${oldest.table} ORDER BY id LIMIT 1 OFFSET ?`).get(total - this.retention - 1) as { id: number } | undefined;
      if (cutoff) {
        oldest.count -= this.db.prepare(`DELETE FROM ${oldest.table} WHERE id <= ?`).run(cutoff.id).changes;
        this.db.prepare(`DELETE FROM ${oldest.runs} WHERE last_id <= ?`).run(cutoff.id);
        oldest.minId = cutoff.id + 1;
        oldest.pairs = pairsOf(this.db, oldest.table);
      }
    }
  }

  private rebuildView(): void {
    const union = this.segments.map((s) => `SELECT ${COLUMNS} FROM ${s.table}`).join(' UNION ALL ');
    this.db.exec(`DROP VIEW IF EXISTS events; CREATE VIEW events AS ${union}`);
  }

  private insertInto(seg: Segment, rows: readonly EventRow[], from: number, to: number): void {
    let i = from;
    const args: (string | number)[] = new Array(INSERT_CHUNK * 4);
    for (; i + INSERT_CHUNK <= to; i += INSERT_CHUNK) {
      for (let j = 0; j < INSERT_CHUNK; j++) {
        const r = rows[i + j] as EventRow;
        args[j * 4] = r.id;
        args[j * 4 + 1] = r.severity;
        args[j * 4 + 2] = r.scope;
        args[j * 4 + 3] = r.data;
      }
      seg.insertChunk.run(args);
    }
    for (; i < to; i++) {
      const r = rows[i] as EventRow;
      seg.insertOne.run(r.id, r.severity, r.scope, r.data);
    }
    // A rolled-back transaction makes the log reopen its segments (resync), which reads these again.
    for (let k = from; k < to; k++) {
      const r = rows[k] as EventRow;
      seg.pairs.note(r.id, r.severity, r.scope);
    }
    this.insertRuns(seg, rows, from, to);
    if (seg.count === 0) seg.minId = (rows[from] as EventRow).id;
    seg.count += to - from;
    seg.maxId = Math.max(seg.maxId, (rows[to - 1] as EventRow).id);
  }

  /** The runs of `rows[from, to)` (event-segments.ts): each stretch of consecutive events about one proposal. */
  private insertRuns(seg: Segment, rows: readonly EventRow[], from: number, to: number): void {
    let proposal: string | null = null;
    let first = 0;
    let last = 0;
    for (let i = from; i < to; i++) {
      const r = rows[i] as EventRow;
      const p = r.proposalId ?? null;
      if (p !== proposal) {
        if (proposal !== null) seg.insertRun.run(proposal, last, first);
        proposal = p;
        first = r.id;
      }
      last = r.id;
    }
    if (proposal !== null) seg.insertRun.run(proposal, last, first);
  }

  /** The next event id, reserving blocks as needed. Never throws: a reservation the database refuses now is stored
   * by the next append, in its transaction, so no event is stored beyond a stored reservation. */
  takeId(): number {
    if (this.nextId > this.reservedUpTo) {
      this.reservedUpTo = this.nextId + ID_BLOCK - 1;
      try {
        this.saveReservation.run(String(this.reservedUpTo));
      } catch {
        this.reservationUnsaved = true;
      }
    }
    this.lastId = this.nextId++;
    return this.lastId;
  }

  /** The newest event id: the last handed out, or after a restart the newest stored (0 when none). */
  get lastIssuedId(): number {
    return this.lastId;
  }

  /** Number of stored rows. */
  get size(): number {
    let n = 0;
    for (const s of this.segments) n += s.count;
    return n;
  }

  /** Writes `rows` (ascending ids) with their job ends in one transaction, then applies retention. A caller's rollback
   * leaves the in-memory segments stale, so a failed write re-reads them and retries once if its table vanished. */
  append(rows: readonly EventRow[]): readonly EventRow[] | null {
    if (rows.length === 0) return null;
    let kept: readonly EventRow[] | null;
    try {
      kept = this.appendTx(rows);
    } catch (err) {
      this.reload();
      if (!/no such table/i.test((err as Error).message)) throw err;
      kept = this.appendTx(rows);
    }
    // Stored with the rows (inside a caller's transaction, resync() undoes this on a rollback).
    this.reservationUnsaved = false;
    return kept;
  }

  /** Re-reads the segments after a caller's transaction that stored events rolled back (EventBus.settle). */
  resync(): void {
    this.reload();
    // The reservation may have been stored by the rolled-back transaction: store it again.
    this.reservationUnsaved = true;
  }

  private reload(): void {
    this.segments.length = 0;
    for (const n of segmentNumbers(this.db)) this.segments.push(openSegment(this.db, n));
    if (this.segments.length === 0) this.segments.push(createSegment(this.db, 1));
    this.reads.clear();
    try {
      this.rebuildView();
    } catch {
      // The database refuses writes (often why we are here): the view is rebuilt at the next rotation or retention.
    }
  }

  /** Events with `sinceId < id <= upTo` that pass `filter`, ascending, at most `limit`, with their served JSON. */
  after(sinceId: number, limit: number, filter: EventFilter, upTo: number = Number.MAX_SAFE_INTEGER): EventRow[] {
    return this.reads.after(this.segments, sinceId, limit, filter, upTo);
  }

  /** The tables of the segments that may hold ids in `(sinceId, upTo]`, oldest first: what the replay thread reads. */
  segmentTables(sinceId: number, upTo: number): string[] {
    const out: string[] = [];
    for (const seg of this.segments) if (seg.count > 0 && seg.maxId > sinceId && seg.minId <= upTo) out.push(seg.table);
    return out;
  }

  /** {@link after}'s events as Server-Sent Events frames, a stream's replay page (event-reads.ts). */
  framesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): string[] {
    return this.reads.framesAfter(this.segments, sinceId, limit, filter, upTo);
  }

  /** The newest `limit` events that pass `filter`, in ascending id order. */
  newest(limit: number, filter: EventFilter): EventRow[] {
    return this.reads.newest(this.segments, limit, filter);
  }
}
