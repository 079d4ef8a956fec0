// The bus's queue (bus.ts): events published and not stored yet, stored in batches (on the log's writer thread, one
// append at a time, or here), delivered to the subscribers once stored; held, bounded and retried while the state
// database refuses them (storage-outage.ts); flushes paced `flushIntervalMs` apart (flush-pacer.ts).
import type { Bus, BusSubscriber } from './bus-api.js';
import type { BusEvent, EventInput } from './event.js';
import type { LocalEventLog } from './local-event-log.js';
import type { EventBusOptions, Pending, PublishCounter } from './bus-options.js';
import type { FrameBlock } from './frames.js';
import { StorageRetry, type StorageOutage } from './storage-outage.js';
import { StoredHeads } from './stored-waiters.js';
import { JobGuards } from './job-guards.js';
import { FlushPacer } from './flush-pacer.js';

/** Events stored a batch at a time at most: the fan-out then hands the streams batches no larger. */
const FLUSH_BATCH = 512;

/** The storing half of the SQLite bus (EventBus, bus.ts, adds publishing, console writes' staging and reads). */
export abstract class EventQueue {
  protected pending: Pending[] = [];
  protected readonly pacer: FlushPacer;
  protected readonly subscribers = new Set<BusSubscriber>();
  protected closed = false;
  protected readonly retry: StorageRetry;
  protected readonly onCount: PublishCounter;
  protected readonly guards = new JobGuards();
  /** The batch on the log's writer thread, delivered once stored. */
  protected inFlight: Pending[] | null = null;
  protected readonly heads: StoredHeads;

  constructor(
    protected readonly log: LocalEventLog,
    options: EventBusOptions,
  ) {
    this.retry = new StorageRetry(options.maxUnstored ?? 100_000, options.retryMs ?? 1000, () => this.retryStore(), options.onStorageState);
    this.onCount = options.onCount ?? (() => {});
    this.pacer = new FlushPacer(options.flushIntervalMs ?? 0, () => {
      if (this.retry.outage === null) this.flushSoon();
    });
    this.heads = new StoredHeads(log.lastIssuedId);
  }

  /** Publishes an event (queued): the outage's reports (bus.ts). */
  abstract publish(input: EventInput): BusEvent;

  /** Whether queued events are stored on the log's writer thread (until close). */
  protected get later(): boolean {
    return this.log.writesLater === true && !this.closed;
  }

  /** The current period of failing stores, or null when events are stored. */
  get storageOutage(): Readonly<StorageOutage> | null {
    return this.retry.outage;
  }

  /** Queues `row` (counted as published) and schedules its store: at once past FLUSH_BATCH or once closed. */
  protected queue(row: Pending): void {
    this.pending.push(row);
    this.onCount(row.severity, 1);
    if (this.closed || this.pending.length >= FLUSH_BATCH) {
      // Late events at shutdown are stored at once; a huge turn flushes every FLUSH_BATCH (rows die young); in an outage, the retry.
      if (this.retry.outage === null || this.closed) this.flushSoon();
    } else {
      this.pacer.schedule();
    }
  }

  /** Events published and not stored yet (queued, or held while the state database refuses them); the supervisor holds jobs' output past CONSOLE_EVENT_BACKLOG_MAX. */
  get backlog(): number {
    return this.pending.length + (this.inFlight?.length ?? 0);
  }

  /** Resolves once events up to `id` (default: every one published) are stored, or their store failed (held for the retry). */
  async whenStored(id = this.log.lastIssuedId): Promise<void> {
    if (this.pending.length === 0 && this.inFlight === null) return;
    const done = this.heads.waiters.add(id);
    this.flushSoon();
    await done;
  }

  /** Stores queued events: on the writer thread, delivered on its reply; else now ({@link tryFlush}). */
  protected flushSoon(): void {
    if (!this.later) this.tryFlush();
    if (!this.later || this.inFlight !== null || this.pending.length === 0) return;
    // At most FLUSH_BATCH a time, as here: the fan-out then hands the streams batches no larger.
    const batch = this.pending.length <= FLUSH_BATCH ? this.pending : this.pending.slice(0, FLUSH_BATCH);
    const appendLater = this.log.appendLater as NonNullable<LocalEventLog['appendLater']>;
    if (!appendLater.call(this.log, batch, this.onStoredLater)) {
      // A console write's transaction is open on the main connection (it carries them, stage, or they go after it), or
      // the last append's frames are being read (a publish in a subscriber): a moment later.
      this.pacer.schedule(1);
      return;
    }
    // Spliced, not sliced: a queue of thousands is not copied at each append.
    if (batch === this.pending) this.pending = [];
    else this.pending.splice(0, FLUSH_BATCH);
    this.inFlight = batch;
  }

  /** The writer thread's reply for {@link inFlight}: delivered, or held again (first) for the retry. */
  protected readonly onStoredLater = (kept: readonly Pending[] | null, err: Error | null, frames?: FrameBlock): void => {
    const batch = this.inFlight as Pending[];
    this.inFlight = null;
    if (err !== null) {
      // Every held start is refused, not only this batch's: none is left to the bound on what is held.
      this.pending = this.guards.refuseStarts(batch.concat(this.pending), err, this.withdrawn);
      this.retry.failed(err, this.pending, 0);
      this.heads.waiters.releaseAll();
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
  protected readonly withdrawn = (row: Pending): void => this.onCount(row.severity, -1);

  /** Waits (blocking) for the batch on the writer thread and handles its reply, before events are stored here. */
  protected landInFlight(): void {
    while (this.inFlight !== null) this.log.drain?.();
  }

  /** Stores and delivers queued events now. @throws the database's error; the events stay held for the retry. */
  flush(): void {
    this.store(0);
  }

  /** See {@link Bus.storeQueued}: with the writer thread, stored there (awaited: no blocking wait here); else now. */
  async storeQueued(limitMs: number): Promise<boolean> {
    if (!this.later) {
      this.tryFlush();
      return true;
    }
    let timer: NodeJS.Timeout | undefined;
    // A thread that hangs alive never answers (a dead one ends the wait): shutdown goes on past the bound.
    const late = new Promise<false>((resolve) => (timer = setTimeout(resolve, limitMs, false)));
    try {
      return await Promise.race([this.whenStored().then(() => true), late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** {@link flush}; the `spare` newest queued events do not count against the bound on failure. */
  protected store(spare: number): void {
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
  protected stored(batch: readonly Pending[], kept: readonly Pending[] | null, frames?: FrameBlock): void {
    const delivered = kept ?? batch;
    if (batch.length > 0) this.heads.storedUpTo((batch[batch.length - 1] as Pending).id);
    if (delivered.length > 0) for (const sub of this.subscribers) sub(delivered, frames);
    this.heads.release(this.pending.length === 0 && this.inFlight === null);
    this.guards.stored(batch, kept);
  }

  /** The retry timer's attempt: what is held, or the period's report when nothing is. */
  protected retryStore(): void {
    if (this.pending.length === 0) {
      const report = this.retry.attemptReport();
      if (report) this.publish(report);
    }
    this.flushSoon();
  }

  /** {@link flush}, its error swallowed: the events stay held and the retry reports the outage. */
  protected tryFlush(): void {
    try {
      this.flush();
    } catch {}
  }

  /** After a store succeeded: ends an outage under way with its report (published). */
  protected storeRecovered(): void {
    const report = this.retry.recovered();
    if (report) this.publish(report);
  }

  /**
   * Flushes and stops scheduling; later publishes store synchronously. Unstorable events go to the listener
   * (`closed-unstored`). With the writer thread, first waits for its append without blocking (as a console write does).
   */
  close(): void | Promise<void> {
    if (this.later && this.log.quiesce) {
      // A dead thread rejects: its append is then over (the blocking wait in the flush returns at once).
      return this.log.quiesce().then(
        (release) => {
          try {
            this.closeNow();
          } finally {
            release();
          }
        },
        () => this.closeNow(),
      );
    }
    this.closeNow();
  }

  /** {@link close} once no append is on the writer thread. */
  protected closeNow(): void {
    this.tryFlush();
    this.closed = true;
    this.retry.close(this.pending.length);
    this.heads.waiters.releaseAll();
  }
}
