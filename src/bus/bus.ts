/**
 * The in-process event bus (spec: What the service does, item 3; api-decisions.md, Events).
 *
 * `publish` is synchronous: it assigns `id` and `ts`, serialises the event once and queues
 * it. At the end of the event-loop turn the queue is flushed: written to the event store in
 * one transaction, then handed to subscribers as one batch of stored rows (the event stream,
 * sse.ts, builds its frames from them). Producers never wait for a subscriber. Flushes are at
 * least `flushIntervalMs` apart (issue 12, P7): while 64 jobs print a few lines each per turn,
 * a flush per turn cost a transaction and a socket write per stream client for a handful of
 * events, and those writes took most of the main thread; a burst of 512 events flushes at once.
 *
 * When the state database cannot store events (disk full, read-only, I/O errors), nothing is
 * delivered that is not stored, and nothing is lost silently: queued events are held in memory
 * (at most `maxUnstored`, the oldest dropped past it and counted) and stored by a retry every
 * `retryMs`; producers never see the error, except those that store an event before they
 * answer ({@link EventBus.publishStored}, {@link EventBus.stage}), which get it. Once storing
 * works again, an event in scope `service/state` tells what happened.
 */
import { proposalOf, type BusEvent, type EventFilter, type EventInput, type Severity } from './event.js';
import { EventJson } from './event-json.js';
import type { Bus, BusSubscriber } from './bus-api.js';
import type { EventRow, LocalEventLog } from './local-event-log.js';
import { StorageRetry, type StorageOutage, type StorageStateListener } from './storage-outage.js';

export { STORAGE_OUTAGE_SCOPE, type StorageOutage, type StorageStateListener } from './storage-outage.js';

export type { Bus, BusSubscriber } from './bus-api.js';

/**
 * Told of every event counted as published (`+1`), and of one withdrawn before it was stored
 * (`-1`, {@link EventBus.publishStored}): the metrics count them (src/metrics). Must be cheap.
 */
export type PublishCounter = (severity: Severity, delta: 1 | -1) => void;

/** Queued events that trigger a flush before the end of the event-loop turn. */
const FLUSH_BATCH = 512;

export interface EventBusOptions {
  /** Bound on the events held in memory while they cannot be stored (default 100,000). */
  readonly maxUnstored?: number;
  /** Time between attempts to store held events (default 1000 ms). */
  readonly retryMs?: number;
  /** Told when storing starts failing, works again, or the bus closes with events unstored. */
  readonly onStorageState?: StorageStateListener;
  /** Counts published events (metrics). */
  readonly onCount?: PublishCounter;
  /**
   * CONSOLE_EVENT_FLUSH_INTERVAL_MS: least time between two flushes of a small queue, in ms
   * (default 0: at the end of every event-loop turn). A flush after a quiet period is never
   * delayed: it happens at the end of the turn that published.
   */
  readonly flushIntervalMs?: number;
}

/**
 * Events of one write stored inside the caller's transaction ({@link EventBus.stage}), to be
 * settled once that transaction committed or rolled back.
 */
export interface StagedEvents {
  /** The write's own events, with their ids. */
  readonly events: readonly BusEvent[];
  readonly rows: readonly Pending[];
  /** Events queued before the write and stored with it. */
  readonly carried: readonly Pending[];
  /** What the event log stored of them all, when it dropped some (LocalEventLog.append). */
  readonly kept: readonly Pending[] | null;
}

const EMPTY_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({});

/** A queued event: its row, as it will be stored. */
export type Pending = EventRow;

/** The bus on the embedded SQLite state database (see the module's comment). */
export class EventBus implements Bus {
  private pending: Pending[] = [];
  private flushScheduled = false;
  /** performance.now() of the last flush that stored something. */
  private lastFlushAt = -Infinity;
  private readonly flushIntervalMs: number;
  private readonly subscribers = new Set<BusSubscriber>();
  private readonly json = new EventJson();
  private closed = false;
  /** The outage period, the bound on held events and the retry timer. */
  private readonly retry: StorageRetry;
  private readonly onCount: PublishCounter;
  /** Queued rows that carry a job guard (JobGuard): only then are stored batches searched for them. */
  private guarded = 0;
  private readonly fencedListeners: ((proposalId: string) => void)[] = [];

  constructor(
    private readonly log: LocalEventLog,
    options: EventBusOptions = {},
  ) {
    this.retry = new StorageRetry(options.maxUnstored ?? 100_000, options.retryMs ?? 1000, () => this.retryStore(), options.onStorageState);
    this.onCount = options.onCount ?? (() => {});
    this.flushIntervalMs = options.flushIntervalMs ?? 0;
  }

  /** The current period of failing stores, or null when events are stored. */
  get storageOutage(): Readonly<StorageOutage> | null {
    return this.retry.outage;
  }

  /**
   * Publishes one event. Synchronous and cheap: callable from any code on the main thread.
   * Never throws for the state database: an event it cannot store yet is held and retried.
   * @returns the event as it will be stored, with its `id` (decimal string) and `ts`.
   */
  publish(input: EventInput): BusEvent {
    const { event, row } = this.make(input);
    this.pending.push(row);
    this.onCount(row.severity, 1);
    if (this.closed || this.pending.length >= FLUSH_BATCH) {
      // Late events during shutdown (job exits) are stored at once; and a turn that brings
      // thousands of lines flushes every FLUSH_BATCH of them, so they die young instead of
      // surviving into the old generation while the turn goes on. While stores fail, only the
      // retry timer tries.
      if (this.retry.outage === null || this.closed) this.tryFlush();
    } else {
      this.scheduleFlush();
    }
    return event;
  }

  /** A flush at the end of this event-loop turn, or `flushIntervalMs` after the last one. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    const wait = this.lastFlushAt + this.flushIntervalMs - performance.now();
    if (wait < 1) setImmediate(this.flushTick);
    else setTimeout(this.flushTick, wait);
  }

  /**
   * Publishes one event and stores it before returning: for answers that carry the event's id.
   * @throws the state database's error when it cannot be stored; the event is then withdrawn
   *   (never stored nor delivered; its id is not reused), and the events queued before it stay
   *   held for the retry.
   */
  publishStored(input: EventInput): BusEvent {
    const event = this.publish(input);
    try {
      // Its own event does not count against the bound: a refused publish drops nothing held.
      this.store(1);
    } catch (err) {
      const i = this.pending.findIndex((p) => p.id === Number(event.id));
      if (i >= 0) {
        const [row] = this.pending.splice(i, 1) as [Pending];
        this.onCount(row.severity, -1);
        const outage = this.retry.outage;
        if (outage) outage.held = this.pending.length;
      }
      throw err;
    }
    return event;
  }

  /**
   * Stores `inputs` as events inside the caller's open transaction, with every queued event
   * (ids stay in stored order), and delivers nothing yet: a write and its events commit
   * together (console/commit.ts). Call {@link settle} once the transaction ended.
   * @throws the state database's error (the queued events are queued again; the caller's
   *   transaction must roll back).
   */
  stage(inputs: readonly EventInput[]): StagedEvents {
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
      if (this.pending.length > 0) this.scheduleFlush();
      throw err;
    }
    return { events: made.map((m) => m.event), rows, carried, kept };
  }

  /**
   * Ends a {@link stage}: committed, its events are counted and delivered (the carried ones
   * first); rolled back, the carried events are queued again, the write's own are gone (their
   * ids never reused), and the event log re-reads what the database holds.
   */
  settle(staged: StagedEvents, committed: boolean): void {
    if (!committed) {
      this.log.resync();
      // The write's own events are gone with its transaction (the carried ones are queued again).
      for (const r of staged.rows) {
        if (r.guard === undefined) continue;
        this.guarded--;
        r.guard.settled?.(false);
      }
      this.pending = staged.carried.concat(this.pending);
      const outage = this.retry.outage;
      if (outage) outage.held = this.pending.length;
      else if (this.pending.length > 0) this.scheduleFlush();
      return;
    }
    for (const row of staged.rows) this.onCount(row.severity, 1);
    this.storeRecovered();
    const all = staged.carried.length > 0 ? staged.carried.concat(staged.rows) : staged.rows;
    this.stored(all, staged.kept);
  }

  private make(input: EventInput): { event: BusEvent; row: Pending } {
    const id = this.log.takeId();
    const event: BusEvent = {
      id: String(id),
      ts: this.json.now(),
      severity: input.severity,
      scope: input.scope,
      summary: input.summary,
      detail: input.detail ?? null,
      payload: input.payload ?? EMPTY_PAYLOAD,
    };
    const row: Pending = { id, severity: input.severity, scope: input.scope, proposalId: proposalOf(input), data: this.json.serialize(event) };
    if (input.guard === undefined) return { event, row };
    this.guarded++;
    return { event, row: { ...row, guard: input.guard } };
  }

  /**
   * Adds a subscriber. Everything published before this call is flushed first (stored, and
   * delivered to earlier subscribers), so the new subscriber receives exactly the events with
   * an id greater than {@link lastId} at the time of the call: callers replay up to that id
   * from the database and lose or duplicate nothing.
   * @returns the head id and a function that removes the subscriber.
   */
  subscribe(sub: BusSubscriber): { headId: number; unsubscribe: () => void } {
    // Events that cannot be stored now reach the subscriber when they are: after its replay,
    // whose stored events all have smaller ids.
    this.tryFlush();
    this.subscribers.add(sub);
    return { headId: this.lastId, unsubscribe: () => this.subscribers.delete(sub) };
  }

  /** Id of the newest published event (0 when none). */
  get lastId(): number {
    return this.log.lastIssuedId;
  }

  /**
   * Flushes what is queued and returns the newest id handed out: a consumer that is already
   * subscribed and starts reading now gets every event with a greater id from its
   * subscription, and replays the others from the store (sse.ts).
   */
  flushedHead(): number {
    this.tryFlush();
    return this.lastId;
  }

  /**
   * Events published and not stored yet: queued for the next store, or held while the state
   * database refuses them. The supervisor holds the jobs' output past a bound (issue 12).
   */
  get backlog(): number {
    return this.pending.length;
  }

  /** Events currently kept in the state database (approximate between retention passes). */
  get storedCount(): number {
    return this.log.size + this.pending.length;
  }

  /** Stored events after `sinceId` (and at most `upTo`), ascending; flushes first (reads go on while stores fail). */
  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[] {
    this.tryFlush();
    return this.log.after(sinceId, limit, filter, upTo);
  }

  /** The newest `limit` stored events passing `filter`, ascending; flushes first (reads go on while stores fail). */
  readNewest(limit: number, filter: EventFilter): EventRow[] {
    this.tryFlush();
    return this.log.newest(limit, filter);
  }

  private readonly flushTick = (): void => {
    this.flushScheduled = false;
    if (this.retry.outage === null) this.tryFlush();
  };

  /**
   * Writes queued events to the database and delivers them to subscribers, now.
   * @throws the state database's error; nothing is delivered then, and the events stay queued
   *   (held, retried every `retryMs`).
   */
  flush(): void {
    this.store(0);
  }

  /** {@link flush}; `spare` newest queued events do not count against the bound on failure. */
  private store(spare: number): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    // Stored before delivery: a client never sees an id that `GET /api/events` cannot return.
    let kept: readonly Pending[] | null;
    try {
      kept = this.log.append(batch);
    } catch (err) {
      this.pending = batch.concat(this.pending);
      this.retry.failed(err, this.pending, spare);
      throw err;
    }
    this.lastFlushAt = performance.now();
    this.storeRecovered();
    this.stored(batch, kept);
  }

  /**
   * Delivers what the log stored of `batch` (`kept`, when it dropped rows: LocalEventLog.append),
   * then tells the guarded rows' publishers whether theirs was stored, and the fenced listeners
   * of each job whose event was dropped.
   */
  private stored(batch: readonly Pending[], kept: readonly Pending[] | null): void {
    const delivered = kept ?? batch;
    if (delivered.length > 0) this.deliver(delivered);
    if (this.guarded === 0) return;
    const storedRows = kept === null ? null : new Set(kept);
    for (const r of batch) {
      const g = r.guard;
      if (g === undefined) continue;
      this.guarded--;
      const stored = storedRows === null || storedRows.has(r);
      g.settled?.(stored);
      if (!stored) for (const fn of this.fencedListeners) fn(g.job);
    }
  }

  onFenced(fn: (proposalId: string) => void): void {
    this.fencedListeners.push(fn);
  }

  /** The retry timer's attempt: what is held, or the period's report when nothing is. */
  private retryStore(): void {
    if (this.pending.length === 0) {
      const report = this.retry.attemptReport();
      if (report) this.publish(report);
    }
    this.tryFlush();
  }

  /** {@link flush} for callers that go on whatever happens: a failure is held and retried. */
  private tryFlush(): void {
    try {
      this.flush();
    } catch {
      // Held: storeFailed scheduled the next attempt.
    }
  }

  /** Storing works again (when it had failed): says so with an event, and to the listener. */
  private storeRecovered(): void {
    const report = this.retry.recovered();
    if (report) this.publish(report);
  }

  private deliver(batch: readonly EventRow[]): void {
    for (const sub of this.subscribers) sub(batch);
  }

  /**
   * Flushes and stops scheduling; later publishes are stored synchronously. Events that cannot
   * be stored by then are reported to the listener (`closed-unstored`), not thrown.
   */
  close(): void {
    this.tryFlush();
    this.closed = true;
    this.retry.close(this.pending.length);
  }
}
