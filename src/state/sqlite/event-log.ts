// Bus events in the state database (api-decisions.md, "Events"), in a ring of segment tables: retention drops the
// oldest whole, as deleting rows one by one blocks the event loop. The view `events` unites them for outside readers.
import type { Db } from './db.js';
import type { EventFilter } from '../../bus/event.js';
import type { FrameBlock } from '../../bus/frames.js';
import type { AppendDone, EventRow, LocalEventLog } from '../../bus/local-event-log.js';
import { AppendExecutor, rowColumns, type AppendOutcome, type AppendPlan } from './event-append.js';
import { packRows, type WireRows } from './append-wire.js';
import { SegmentReads } from './event-reads.js';
import { COLUMNS, createSegment, openSegment, pairsOf, runsOf, type Segment, SEGMENT_PREFIX, segmentNumbers, upgradeSegments } from './event-segments.js';

export type { EventRow } from '../../bus/local-event-log.js';

/** Ids come from blocks reserved in `meta` before use, so an id a client saw is never reused after a crash (at the price of a gap). */
const ID_BLOCK = 10_000;
/** Within this many ids of the reserved bound, an append also stores the next block's reservation in its transaction:
 * a reservation then never waits on this connection (for the writer thread's lock) while a storm of lines is stored. */
const RESERVE_AHEAD = ID_BLOCK / 2;
/** Segments hold a quarter of the retention bound each (within these limits). */
const SEGMENTS_PER_RETENTION = 4;
const SEGMENT_MIN = 100;
const SEGMENT_MAX = 100_000;

/** The event writer thread as the log uses it (event-writer.ts): one append at a time. */
export interface AppendWriter {
  /** An append was submitted and its `done` has not run yet. */
  readonly busy: boolean;
  /** The last append's `done` runs with frames in memory the thread writes again: no append may start ({@link submit} throws). */
  readonly reading: boolean;
  /** Runs `plan` over `rows` (append-wire.ts packRows) on the thread; `done` gets its outcome or the database's error, on this thread, later or in {@link drain}. */
  submit(plan: AppendPlan, rows: WireRows, done: (outcome: AppendOutcome | null, err: Error | null, frames?: FrameBlock) => void): void;
  /** Waits (blocking) for the submitted append and runs its `done` before returning; a no-op when none is. */
  drain(): void;
  /** Resolves (without blocking) once no append is submitted, its `done` run; rejects when the thread is taken for dead. */
  idle(): Promise<void>;
}

/** The SQLite event log: the bus's {@link LocalEventLog}. */
export class EventLog implements LocalEventLog {
  private nextId: number;
  private reservedUpTo: number;
  private reservationUnsaved = false;
  private lastId: number;
  /** The segments as committed: reads use them, and each append is planned from them. */
  private readonly segments: Segment[];
  /** Rows per segment. */
  readonly segmentSize: number;
  private readonly saveReservation;
  private readonly executor: AppendExecutor;
  private readonly reads: SegmentReads;
  private writer: AppendWriter | null = null;
  /** Console writes between {@link quiesce} and its release: no append starts on the writer thread meanwhile. */
  private holds = 0;
  /** Resolves once the last holder of {@link quiesce} released. */
  private quietTail: Promise<void> = Promise.resolve();

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
    this.executor = new AppendExecutor(db);
  }

  /** Stores later appends ({@link appendLater}) on the event writer thread; its writes and this connection's are never at once. */
  attachWriter(writer: AppendWriter): void {
    this.writer = writer;
  }

  /** Whether appends go to a writer thread ({@link appendLater}). */
  get writesLater(): boolean {
    return this.writer !== null;
  }

  /** Whether an append is on the writer thread now. */
  get appending(): boolean {
    return this.writer?.busy ?? false;
  }

  /** Waits (blocking) until no append is on the writer thread, each one's `done` run: before this connection writes. */
  drain(): void {
    const w = this.writer;
    if (w === null) return;
    // A `done` may start the next append (the bus flushing what came meanwhile): wait for that one too.
    while (w.busy) w.drain();
  }

  /**
   * Resolves once no append is on the writer thread (each one's `done` run), without blocking the main thread; from
   * the call until the returned release runs, no append starts there ({@link appendLater} refuses): this connection
   * writes meanwhile, and the two never wait for each other's lock. Release once this connection's write ended.
   * One holder at a time, in call order: a transaction holds until it ends, so no other holder's write lands in it.
   * @throws (rejects) the writer's Error when its thread ended or did not answer (its death ends the service).
   */
  async quiesce(): Promise<() => void> {
    this.holds++;
    const before = this.quietTail;
    let unlock!: () => void;
    this.quietTail = new Promise((resolve) => (unlock = resolve));
    let held = true;
    const release = (): void => {
      if (!held) return;
      held = false;
      this.holds--;
      unlock();
    };
    const w = this.writer;
    try {
      await before;
      // A `done` may have started the next append before the hold: wait for that one too.
      if (w !== null) while (w.busy) await w.idle();
    } catch (err) {
      release();
      throw err;
    }
    return release;
  }

  /**
   * Stores `rows` (ids ascending, every smaller id stored) on the writer thread; `done` is told on this thread. @returns
   * false, storing nothing, when it cannot now: no writer, an append already there or its frames being read (its
   * `done` runs), a console write waiting for it or under way ({@link quiesce}), or a transaction open on this connection.
   */
  appendLater(rows: readonly EventRow[], done: AppendDone): boolean {
    const w = this.writer;
    if (w === null || w.busy || w.reading || this.holds > 0 || this.db.inTransaction) return false;
    const plan = this.plan(rows.length);
    // Packed (job lines as their two parts, joined on the thread: LineRow): no copy of their JSON is made here.
    w.submit(plan, packRows(rows), (outcome, err, frames) => {
      if (outcome === null) return done(null, err ?? new Error('event writer: no outcome'));
      try {
        this.committed(plan, rows, outcome);
      } catch {
        // Committed all the same: the segments are read again from what the database holds.
        this.reload();
      }
      const kept = keptOf(rows, outcome);
      // The frames are the rows': when the append dropped some (their jobs no longer running), the bus makes its own.
      done(kept, null, kept === null ? frames : undefined);
    });
    return true;
  }

  /** What `rows.length` rows appended now write, from the committed segments (see AppendPlan). */
  private plan(n: number): AppendPlan {
    const sizes = this.segments.map((s) => ({ table: s.table, count: s.count }));
    const newest = this.segments[this.segments.length - 1] as Segment;
    let n0 = newest.n;
    let count = newest.count;
    let table = newest.table;
    const create: number[] = [];
    const parts: { table: string; runs: string; from: number; to: number }[] = [];
    for (let i = 0; i < n; ) {
      if (count >= this.segmentSize) {
        n0++;
        create.push(n0);
        table = `${SEGMENT_PREFIX}${n0}`;
        count = 0;
        sizes.push({ table, count: 0 });
      }
      const take = Math.min(n - i, this.segmentSize - count);
      parts.push({ table, runs: runsOf(table), from: i, to: i + take });
      count += take;
      (sizes[sizes.length - 1] as { count: number }).count = count;
      i += take;
    }
    let total = sizes.reduce((a, s) => a + s.count, 0);
    const drop: string[] = [];
    while (sizes.length > 1 && total - (sizes[0] as { count: number }).count >= this.retention) {
      const oldest = sizes.shift() as { table: string; count: number };
      total -= oldest.count;
      drop.push(oldest.table);
    }
    // Segments made under a larger bound (before a restart) can hold more: trim the oldest by rows, once.
    const excess = total - this.retention - this.segmentSize;
    const oldest = sizes[0] as { table: string };
    const trim = excess > 0 ? { table: oldest.table, runs: runsOf(oldest.table), offset: total - this.retention - 1 } : null;
    return {
      reservation: this.reservationUnsaved ? this.reservedUpTo : this.nextId + RESERVE_AHEAD > this.reservedUpTo ? this.reservedUpTo + ID_BLOCK : null,
      create,
      parts,
      drop,
      trim,
      view: create.length > 0 || drop.length > 0 ? sizes.map((s) => s.table) : null,
    };
  }

  /** Brings the committed segments up to an append that committed (`plan` over `rows`, with its `outcome`). */
  private committed(plan: AppendPlan, rows: readonly EventRow[], outcome: AppendOutcome): void {
    // The reservation it stored: one made meanwhile ({@link takeId}) is larger and stays to store.
    if (plan.reservation !== null && plan.reservation >= this.reservedUpTo) {
      this.reservedUpTo = plan.reservation;
      this.reservationUnsaved = false;
    }
    const created = new Set<string>();
    const dropped = new Set(plan.drop);
    for (const n of plan.create) {
      // Opened from what was committed: its rows, bounds and pairs are read, not noted below (one retention
      // dropped in the same append is not there).
      const table = `${SEGMENT_PREFIX}${n}`;
      created.add(table);
      if (!dropped.has(table)) this.segments.push(openSegment(this.db, n));
    }
    const fenced = outcome.dropped;
    let d = 0;
    for (const part of plan.parts) {
      const seg = created.has(part.table) || dropped.has(part.table) ? null : this.segments.find((s) => s.table === part.table);
      for (let i = part.from; i < part.to; i++) {
        if (d < fenced.length && fenced[d] === i) {
          d++;
          continue;
        }
        if (!seg) continue;
        const r = rows[i] as EventRow;
        const id = r.id;
        seg.pairs.note(id, r.severity, r.scope);
        if (seg.count++ === 0) seg.minId = id;
        if (id > seg.maxId) seg.maxId = id;
      }
    }
    for (const table of plan.drop) {
      const i = this.segments.findIndex((s) => s.table === table);
      if (i >= 0) this.segments.splice(i, 1);
      this.reads.forget(table);
    }
    if (outcome.trimmed !== null) {
      const oldest = this.segments[0] as Segment;
      oldest.count -= outcome.trimmed.removed;
      oldest.minId = outcome.trimmed.cutoff + 1;
      oldest.pairs = pairsOf(this.db, oldest.table);
    }
  }

  /** The next event id, reserving blocks as needed. Never throws: a reservation the database refuses now is stored
   * by the next append, in its transaction, so no event is stored beyond a stored reservation. */
  takeId(): number {
    if (this.nextId > this.reservedUpTo) {
      this.reservedUpTo = this.nextId + ID_BLOCK - 1;
      // On disk before the id is handed out: here only when the appends did not store it ahead (RESERVE_AHEAD),
      // the first block after a start or ids outrunning the appends; it may wait for the writer thread's lock.
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

  /** Writes `rows` (ascending ids) with their job ends in one transaction on this connection (a savepoint inside a
   * caller's), after any append on the writer thread. @returns null if all were stored, else those stored.
   * @throws the database's error; nothing is written, and a statement whose table vanished is prepared again once. */
  append(rows: readonly EventRow[]): readonly EventRow[] | null {
    if (rows.length === 0) return null;
    this.drain();
    const cols = rowColumns(rows);
    let plan = this.plan(rows.length);
    let outcome: AppendOutcome;
    try {
      outcome = this.executor.run(plan, cols);
    } catch (err) {
      if (!/no such table/i.test((err as Error).message)) throw err;
      this.reload();
      plan = this.plan(rows.length);
      outcome = this.executor.run(plan, cols);
    }
    this.committed(plan, rows, outcome);
    return keptOf(rows, outcome);
  }

  /** Re-reads the segments after a caller's transaction that stored events rolled back (EventBus.settle). */
  resync(): void {
    this.reload();
    // The reservation may have been stored by the rolled-back transaction: store it again.
    this.reservationUnsaved = true;
  }

  private rebuildView(): void {
    const union = this.segments.map((s) => `SELECT ${COLUMNS} FROM ${s.table}`).join(' UNION ALL ');
    this.db.exec(`DROP VIEW IF EXISTS events; CREATE VIEW events AS ${union}`);
  }

  private reload(): void {
    this.executor?.forget();
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

/** `rows` but those the append dropped (their job no longer running); null when it dropped none. */
function keptOf(rows: readonly EventRow[], outcome: AppendOutcome): readonly EventRow[] | null {
  if (outcome.dropped.length === 0) return null;
  const dropped = new Set(outcome.dropped);
  return rows.filter((_r, i) => !dropped.has(i));
}
