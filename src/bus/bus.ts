// The in-process event bus on SQLite (api-decisions.md, "Events"): queued events are stored in one transaction, then
// delivered as one batch, flushes `flushIntervalMs` apart; nothing unstored is delivered (held, bounded, retried:
// storage-outage.ts). With a writer thread (LocalEventLog.writesLater) they are stored there, one append at a time.
import type { BusEvent, EventFilter, EventInput, JobGuard, Severity } from './event.js';
import { EventJson } from './event-json.js';
import type { Bus, BusSubscriber } from './bus-api.js';
import { type EventRow, type LocalEventLog, whileQuiet } from './local-event-log.js';
import { eventRow, LineRow, type EventBusOptions, type Pending, type PublishCounter, type StagedEvents } from './bus-options.js';
import type { FrameBlock } from './frames.js';
import type { FrameBlockReader } from './replay-cache.js';
import { StorageRetry, type StorageOutage } from './storage-outage.js';
import { StoredWaiters, UnsettledStages } from './stored-waiters.js';
import { JobGuards } from './job-guards.js';
import { FlushPacer } from './flush-pacer.js';

export { STORAGE_OUTAGE_SCOPE, type StorageOutage, type StorageStateListener } from './storage-outage.js';
export type { Bus, BusSubscriber } from './bus-api.js';
export type { EventBusOptions, Pending, PublishCounter, StagedEvents } from './bus-options.js';

const FLUSH_BATCH = 512;

/** The bus on the embedded SQLite state database (see the module's comment). */
export class EventBus implements Bus {
  private pending: Pending[] = [];
  private readonly pacer: FlushPacer;
  private readonly subscribers = new Set<BusSubscriber>();
  private readonly json = new EventJson();
  private closed = false;
  private readonly retry: StorageRetry;
  private readonly onCount: PublishCounter;
  private readonly guards = new JobGuards();
  /** The batch on the log's writer thread, delivered once stored; and the newest id stored (every smaller one was). */
  private inFlight: Pending[] | null = null;
  private storedHead = 0;
  /** The newest id published but as a job's line: a read waits for it to be stored (read-your-writes), never for lines. */
  private plainHead = 0;
  private readonly waiters = new StoredWaiters();
  private readonly stages = new UnsettledStages();
  /** See {@link Bus.readFrameBlock}: only ids already delivered are asked for, so nothing queued needs a flush. */
  readonly readFrameBlock?: FrameBlockReader;

  constructor(
    private readonly log: LocalEventLog,
    options: EventBusOptions = {},
  ) {
    this.retry = new StorageRetry(options.maxUnstored ?? 100_000, options.retryMs ?? 1000, () => this.retryStore(), options.onStorageState);
    this.onCount = options.onCount ?? (() => {});
    this.pacer = new FlushPacer(options.flushIntervalMs ?? 0, () => {
      if (this.retry.outage === null) this.flushSoon();
    });
    if (options.readFrameBlock) this.readFrameBlock = options.readFrameBlock;
    this.storedHead = log.lastIssuedId;
  }

  /** Whether queued events are stored on the log's writer thread (until close). */
  private get later(): boolean {
    return this.log.writesLater === true && !this.closed;
  }

  /** The current period of failing stores, or null when events are stored. */
  get storageOutage(): Readonly<StorageOutage> | null {
    return this.retry.outage;
  }

  /** See {@link Bus.publish}; @returns the event as it will be stored, with its `id` and `ts`. */
  publish(input: EventInput): BusEvent {
    const { event, row } = this.make(input);
    this.queue(row);
    return event;
  }

  /** See {@link Bus.publishEncoded}: the row's JSON is the tail behind the id and time taken now, joined where it is read (LineRow). */
  publishEncoded(severity: Severity, scope: string, tail: string, proposalId: string, guard: JobGuard | undefined): void {
    const id = this.log.takeId();
    // Counted before it is queued: a full queue is stored (and its guards settled) at once.
    this.guards.queued(guard !== undefined);
    this.queue(new LineRow(id, severity, scope, proposalId, this.json.now(), tail, guard));
  }

  private queue(row: Pending): void {
    this.pending.push(row);
    this.onCount(row.severity, 1);
    if (this.closed || this.pending.length >= FLUSH_BATCH) {
      // Late events at shutdown are stored at once; a huge turn flushes every FLUSH_BATCH (rows die young); in an outage, the retry.
      if (this.retry.outage === null || this.closed) this.flushSoon();
    } else {
      this.pacer.schedule();
    }
  }

  /**
   * Publishes one event and stores it (with those queued before) before returning; with the writer thread, once its
   * append in flight ended, awaited without blocking the main thread (a promise), none starting meanwhile.
   * @throws the state database's error; the event is withdrawn (its id never reused) and events queued before it stay held.
   */
  publishStored(input: EventInput): BusEvent | Promise<BusEvent> {
    // After any console write's events: its hold on the writer thread ends at its commit, their delivery after it.
    if (this.later && this.log.quiesce) return whileQuiet(this.log.quiesce(), () => this.stages.none().then(() => this.publishStoredNow(input)));
    return this.publishStoredNow(input);
  }

  /** {@link publishStored} here and now (after a blocking wait for an append on the writer thread, if any). */
  private publishStoredNow(input: EventInput): BusEvent {
    const event = this.publish(input);
    try {
      // Its own event does not count against the bound: a refused publish drops nothing held.
      this.store(1);
    } catch (err) {
      const i = this.pending.findIndex((p) => p.id === Number(event.id));
      if (i >= 0) this.withdrawn((this.pending.splice(i, 1) as [Pending])[0]);
      const outage = this.retry.outage;
      if (outage) outage.held = this.pending.length;
      throw err;
    }
    return event;
  }

  /** Stores `inputs` in the caller's transaction after every queued event, delivering nothing until {@link settle}.
   * @throws the state database's error (queued events are queued again; the caller must roll back). */
  stage(inputs: readonly EventInput[]): StagedEvents {
    this.landInFlight();
    const carried = this.pending;
    this.pending = [];
    const made = inputs.map((i) => this.make(i));
    const rows = made.map((m) => m.row);
    const all = carried.length > 0 ? carried.concat(rows) : rows;
    let kept: readonly Pending[] | null;
    try {
      kept = this.log.append(all);
    } catch (err) {
      this.pending = carried.concat(this.pending);
      if (this.pending.length > 0) this.pacer.schedule();
      throw err;
    }
    this.stages.opened();
    return { events: made.map((m) => m.event), rows, carried, kept };
  }

  /** Ends a {@link stage}: committed, delivers (carried events first); rolled back, queues the carried events again. */
  settle(staged: StagedEvents, committed: boolean): void {
    try {
      this.settleNow(staged, committed);
    } finally {
      this.stages.closed();
    }
  }

  private settleNow(staged: StagedEvents, committed: boolean): void {
    if (!committed) {
      this.log.resync();
      this.guards.rolledBack(staged.rows);
      this.pending = staged.carried.concat(this.pending);
      const outage = this.retry.outage;
      if (outage) outage.held = this.pending.length;
      else if (this.pending.length > 0) this.pacer.schedule();
      return;
    }
    for (const row of staged.rows) this.onCount(row.severity, 1);
    this.storeRecovered();
    const all = staged.carried.length > 0 ? staged.carried.concat(staged.rows) : staged.rows;
    this.stored(all, staged.kept);
    if (this.pending.length > 0) this.pacer.schedule();
  }

  private make(input: EventInput): { event: BusEvent; row: Pending } {
    this.guards.queued(input.guard !== undefined);
    this.plainHead = this.log.takeId();
    return eventRow(this.json, this.plainHead, input);
  }

  /** See {@link Bus.subscribe}; flushes first (here). */
  subscribe(sub: BusSubscriber): { headId: number; unsubscribe: () => void } {
    // Events not storable now reach the subscriber once stored: after its replay, whose ids are all smaller.
    this.tryFlush();
    this.subscribers.add(sub);
    return { headId: this.lastId, unsubscribe: () => this.subscribers.delete(sub) };
  }

  /** Id of the newest published event (0 when none). */
  get lastId(): number {
    return this.log.lastIssuedId;
  }

  /** What a subscribed consumer's replay ends at (sse.ts): with the writer thread, the newest id stored (each smaller one
   * was, and was delivered), with no wait for its append nor store here; without it, the newest id once the queue is stored. */
  flushedHead(): number {
    if (this.later) return this.storedHead;
    this.tryFlush();
    return this.lastId;
  }

  /** Events published and not stored yet (queued, or held while the state database refuses them); the supervisor holds jobs' output past CONSOLE_EVENT_BACKLOG_MAX. */
  get backlog(): number {
    return this.pending.length + (this.inFlight?.length ?? 0);
  }

  /** Events currently kept in the state database (approximate between retention passes). */
  get storedCount(): number {
    return this.log.size + this.backlog;
  }

  /** See {@link Bus.readAfter}; flushes first (here). */
  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[] | Promise<EventRow[]> {
    if (this.later && this.plainHead > this.storedHead) return this.whenPublishedStored().then(() => this.log.after(sinceId, limit, filter, upTo));
    if (!this.later) this.tryFlush();
    return this.log.after(sinceId, limit, filter, upTo);
  }

  /** See {@link Bus.readFramesAfter}; flushes first only when an event up to `upTo` is still queued. */
  readFramesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): string[] {
    // A replay reads up to an id delivered: a flush per page would commit the jobs' lines a few at a time.
    if ((this.pending[0]?.id ?? Infinity) <= upTo) this.tryFlush();
    return this.log.framesAfter(sinceId, limit, filter, upTo);
  }

  /** See {@link Bus.readNewest}; flushes first (here). */
  readNewest(limit: number, filter: EventFilter): EventRow[] | Promise<EventRow[]> {
    if (this.later && this.plainHead > this.storedHead) return this.whenPublishedStored().then(() => this.log.newest(limit, filter));
    if (!this.later) this.tryFlush();
    return this.log.newest(limit, filter);
  }

  /** See {@link Bus.whenPublishedStored}: waits only while the writer thread has such an event queued. */
  async whenPublishedStored(): Promise<void> {
    if (this.later && this.plainHead > this.storedHead) await this.whenStored(this.plainHead);
  }

  /** Resolves once events up to `id` (default: every one published) are stored, or their store failed (held for the retry). */
  async whenStored(id = this.log.lastIssuedId): Promise<void> {
    if (this.pending.length === 0 && this.inFlight === null) return;
    const done = this.waiters.add(id);
    this.flushSoon();
    await done;
  }

  /** Stores queued events: on the writer thread, delivered on its reply; else now ({@link tryFlush}). */
  private flushSoon(): void {
    if (!this.later) this.tryFlush();
    if (!this.later || this.inFlight !== null || this.pending.length === 0) return;
    // At most FLUSH_BATCH a time, as here: the fan-out then hands the streams batches no larger.
    const batch = this.pending.length <= FLUSH_BATCH ? this.pending : this.pending.slice(0, FLUSH_BATCH);
    const appendLater = this.log.appendLater as NonNullable<LocalEventLog['appendLater']>;
    if (!appendLater.call(this.log, batch, this.onStoredLater)) {
      // A console write's transaction is open on the main connection: it carries them (stage), or they go after it.
      this.pacer.schedule(1);
      return;
    }
    // Spliced, not sliced: a queue of thousands is not copied at each append.
    if (batch === this.pending) this.pending = [];
    else this.pending.splice(0, FLUSH_BATCH);
    this.inFlight = batch;
  }

  /** The writer thread's reply for {@link inFlight}: delivered, or held again (first) for the retry. */
  private readonly onStoredLater = (kept: readonly Pending[] | null, err: Error | null, frames?: FrameBlock): void => {
    const batch = this.inFlight as Pending[];
    this.inFlight = null;
    if (err !== null) {
      // Every held start is refused, not only this batch's: none is left to the bound on what is held.
      this.pending = this.guards.refuseStarts(batch.concat(this.pending), err, this.withdrawn);
      this.retry.failed(err, this.pending, 0);
      this.waiters.releaseAll();
      return;
    }
    this.pacer.flushed();
    this.storeRecovered();
    this.stored(batch, kept, frames);
    // A full batch waiting goes at once (the thread stays busy under a storm), but after a drain that waits: not in it.
    if (this.retry.outage === null && this.pending.length >= FLUSH_BATCH) queueMicrotask(this.pacer.tick);
    else if (this.retry.outage === null && this.pending.length > 0) this.pacer.schedule();
  };

  /** An event withdrawn before it was stored (its id never reused): no longer counted as published. */
  private readonly withdrawn = (row: Pending): void => this.onCount(row.severity, -1);

  /** Waits (blocking) for the batch on the writer thread and handles its reply, before events are stored here. */
  private landInFlight(): void {
    while (this.inFlight !== null) this.log.drain?.();
  }

  /** Stores and delivers queued events now. @throws the database's error; the events stay held for the retry. */
  flush(): void {
    this.store(0);
  }

  /** {@link flush}; the `spare` newest queued events do not count against the bound on failure. */
  private store(spare: number): void {
    this.landInFlight();
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    // Stored before delivery: a client never sees an id that `GET /api/events` cannot return.
    let kept: readonly Pending[] | null;
    try {
      kept = this.log.append(batch);
    } catch (err) {
      // Every held start is refused, not only this batch's: none is left to the bound on what is held.
      this.pending = this.guards.refuseStarts(batch.concat(this.pending), err, this.withdrawn);
      this.retry.failed(err, this.pending, spare);
      throw err;
    }
    this.pacer.flushed();
    this.storeRecovered();
    this.stored(batch, kept);
  }

  /** Delivers what the log kept of `batch` (with its frames, made where it was stored), then settles guarded rows and tells fenced listeners of dropped jobs' events. */
  private stored(batch: readonly Pending[], kept: readonly Pending[] | null, frames?: FrameBlock): void {
    const delivered = kept ?? batch;
    if (batch.length > 0) this.storedHead = Math.max(this.storedHead, (batch[batch.length - 1] as Pending).id);
    if (delivered.length > 0) for (const sub of this.subscribers) sub(delivered, frames);
    if (this.waiters.size > 0) this.waiters.release(this.pending.length === 0 && this.inFlight === null ? Infinity : this.storedHead);
    this.guards.stored(batch, kept);
  }

  onFenced(fn: (proposalId: string) => void): void {
    this.guards.onFenced(fn);
  }

  /** The retry timer's attempt: what is held, or the period's report when nothing is. */
  private retryStore(): void {
    if (this.pending.length === 0) {
      const report = this.retry.attemptReport();
      if (report) this.publish(report);
    }
    this.flushSoon();
  }

  private tryFlush(): void {
    try {
      this.flush();
    } catch {}
  }

  private storeRecovered(): void {
    const report = this.retry.recovered();
    if (report) this.publish(report);
  }

  /** Flushes and stops scheduling; later publishes store synchronously. Unstorable events go to the listener (`closed-unstored`). */
  close(): void {
    this.tryFlush();
    this.closed = true;
    this.retry.close(this.pending.length);
    this.waiters.releaseAll();
  }
}
