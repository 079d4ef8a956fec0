/**
 * The in-process event bus (spec: What the service does, item 3; api-decisions.md, Events).
 *
 * `publish` is synchronous: it assigns `id` and `ts`, serialises the event once and queues
 * it. Once per event-loop turn the queue is flushed: written to the state database in one
 * transaction, then fanned out to subscribers as pre-built Server-Sent Events frames, one
 * shared string per distinct filter. Producers never wait for a subscriber.
 *
 * When the state database cannot store events (disk full, read-only, I/O errors), nothing is
 * delivered that is not stored, and nothing is lost silently: queued events are held in memory
 * (at most `maxUnstored`, the oldest dropped past it and counted) and stored by a retry every
 * `retryMs`; producers never see the error, except those that store an event before they
 * answer ({@link EventBus.publishStored}, {@link EventBus.stage}), which get it. Once storing
 * works again, an event in scope `service/state` tells what happened.
 */
import type { EventLog, EventRow } from '../state/event-log.js';
import {
  filterKey,
  passes,
  proposalOf,
  type BusEvent,
  type EventFilter,
  type EventInput,
  type Severity,
} from './event.js';

/** A consumer of published events, e.g. one Server-Sent Events client. */
export interface BusSubscriber {
  readonly filter: EventFilter;
  /**
   * Receives the frames (`id: …\ndata: …\n\n`, concatenated, UTF-8) of the events of one
   * flush that pass its filter. The buffer is shared by every subscriber with the same filter:
   * never modify it. Must not throw and must not block: slow consumers drop themselves.
   */
  receive(frames: Buffer): void;
}

/** Called synchronously for every published event (metrics, logs). Must be cheap. */
export type EventTap = (event: BusEvent) => void;

/** Queued events that trigger a flush before the end of the event-loop turn. */
const FLUSH_BATCH = 512;

/** Scope of the event that reports a period when events could not be stored. */
export const STORE_OUTAGE_SCOPE = 'service/state';

/** A period during which the state database refused events. */
export interface StoreOutage {
  /** ISO time of the first failure. */
  readonly since: string;
  /** The last error, e.g. `database or disk is full`. */
  error: string;
  /** Events held in memory, waiting to be stored. */
  held: number;
  /** The most events held at once during the period. */
  heldMax: number;
  /** Events dropped because more than `maxUnstored` were held. */
  dropped: number;
}

/** What the bus reports about storing: failing (first failure), recovered, or closed with events unstored. */
export type StoreStateListener = (state: 'failing' | 'recovered' | 'closed-unstored', outage: Readonly<StoreOutage>) => void;

export interface EventBusOptions {
  /** Bound on the events held in memory while they cannot be stored (default 100,000). */
  readonly maxUnstored?: number;
  /** Time between attempts to store held events (default 1000 ms). */
  readonly retryMs?: number;
  /** Told when storing starts failing, works again, or the bus closes with events unstored. */
  readonly onStoreState?: StoreStateListener;
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
}

const EMPTY_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({});

/** A queued event: its stored row, and its frame once built. */
export interface Pending extends EventRow {
  frame: string | undefined;
}

export class EventBus {
  private pending: Pending[] = [];
  private flushScheduled = false;
  private readonly subscribers = new Set<BusSubscriber>();
  private readonly taps: EventTap[] = [];
  private lastTsMs = -1;
  private lastTs = '';
  private closed = false;
  private published = 0;
  private readonly bySeverity: Record<Severity, number> = { info: 0, success: 0, failure: 0, warning: 0, fallback: 0 };
  /** Last frozen payload serialised, by identity: line events share one constant payload. */
  private lastPayload: object | undefined;
  private lastPayloadJson = '{}';
  /** Set while the state database refuses events. */
  private outage: StoreOutage | null = null;
  private retryTimer: NodeJS.Timeout | undefined;
  private readonly maxUnstored: number;
  private readonly retryMs: number;
  private readonly onStoreState: StoreStateListener | undefined;

  constructor(
    private readonly log: EventLog,
    options: EventBusOptions = {},
  ) {
    this.maxUnstored = options.maxUnstored ?? 100_000;
    this.retryMs = options.retryMs ?? 1000;
    this.onStoreState = options.onStoreState;
  }

  /** The current period of failing stores, or null when events are stored. */
  get storeOutage(): Readonly<StoreOutage> | null {
    return this.outage;
  }

  /**
   * Publishes one event. Synchronous and cheap: callable from any code on the main thread.
   * Never throws for the state database: an event it cannot store yet is held and retried.
   * @returns the event as it will be stored, with its `id` (decimal string) and `ts`.
   */
  publish(input: EventInput): BusEvent {
    const { event, row } = this.make(input);
    this.pending.push(row);
    this.count(row);
    for (const tap of this.taps) tap(event);
    if (this.closed || this.pending.length >= FLUSH_BATCH) {
      // Late events during shutdown (job exits) are stored at once; and a turn that brings
      // thousands of lines flushes every FLUSH_BATCH of them, so they die young instead of
      // surviving into the old generation while the turn goes on. While stores fail, only the
      // retry timer tries.
      if (this.outage === null || this.closed) this.tryFlush();
    } else {
      this.scheduleFlush();
    }
    return event;
  }

  /** A flush at the end of this event-loop turn. */
  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(this.flushTick);
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
        this.published--;
        this.bySeverity[row.severity as Severity]--;
        if (this.outage) this.outage.held = this.pending.length;
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
    try {
      this.log.append(all);
    } catch (err) {
      this.pending = carried.concat(this.pending);
      if (this.pending.length > 0) this.scheduleFlush();
      throw err;
    }
    return { events: made.map((m) => m.event), rows, carried };
  }

  /**
   * Ends a {@link stage}: committed, its events are counted and delivered (the carried ones
   * first); rolled back, the carried events are queued again, the write's own are gone (their
   * ids never reused), and the event log re-reads what the database holds.
   */
  settle(staged: StagedEvents, committed: boolean): void {
    if (!committed) {
      this.log.resync();
      this.pending = staged.carried.concat(this.pending);
      if (this.outage) this.outage.held = this.pending.length;
      else if (this.pending.length > 0) this.scheduleFlush();
      return;
    }
    for (const row of staged.rows) this.count(row);
    for (const tap of this.taps) for (const e of staged.events) tap(e);
    if (this.outage) this.storeRecovered();
    const delivered = staged.carried.length > 0 ? staged.carried.concat(staged.rows) : staged.rows;
    if (this.subscribers.size > 0 && delivered.length > 0) this.fanOut(delivered as Pending[]);
  }

  private make(input: EventInput): { event: BusEvent; row: Pending } {
    const id = this.log.takeId();
    const event: BusEvent = {
      id: String(id),
      ts: this.now(),
      severity: input.severity,
      scope: input.scope,
      summary: input.summary,
      detail: input.detail ?? null,
      payload: input.payload ?? EMPTY_PAYLOAD,
    };
    return {
      event,
      row: { id, severity: input.severity, scope: input.scope, proposalId: proposalOf(input), data: this.serialize(event), frame: undefined },
    };
  }

  private count(row: Pending): void {
    this.published++;
    this.bySeverity[row.severity as Severity]++;
  }

  /** Registers a tap called for each published event. */
  tap(fn: EventTap): void {
    this.taps.push(fn);
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

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Events currently kept in the state database (approximate between retention passes). */
  get storedCount(): number {
    return this.log.size + this.pending.length;
  }

  /** Events published since start-up, by severity (read by the metrics at scrape time). */
  get publishedBySeverity(): Readonly<Record<Severity, number>> {
    return this.bySeverity;
  }

  /** Events published since start-up. */
  get publishedCount(): number {
    return this.published;
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
    if (this.outage === null) this.tryFlush();
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
    try {
      this.log.append(batch);
    } catch (err) {
      this.pending = batch.concat(this.pending);
      this.storeFailed(err, spare);
      throw err;
    }
    if (this.outage) this.storeRecovered();
    if (this.subscribers.size > 0) this.fanOut(batch);
  }

  /** {@link flush} for callers that go on whatever happens: a failure is held and retried. */
  private tryFlush(): void {
    try {
      this.flush();
    } catch {
      // Held: storeFailed scheduled the next attempt.
    }
  }

  private storeFailed(err: unknown, spare = 0): void {
    const error = err instanceof Error ? err.message : String(err);
    const first = this.outage === null;
    const outage = (this.outage ??= { since: new Date().toISOString(), error, held: 0, heldMax: 0, dropped: 0 });
    outage.error = error;
    const excess = this.pending.length - spare - this.maxUnstored;
    if (excess > 0) {
      this.pending.splice(0, excess);
      outage.dropped += excess;
    }
    outage.held = this.pending.length;
    outage.heldMax = Math.max(outage.heldMax, outage.held);
    if (first) this.onStoreState?.('failing', outage);
    if (this.retryTimer === undefined && !this.closed) {
      this.retryTimer = setTimeout(() => {
        this.retryTimer = undefined;
        this.tryFlush();
      }, this.retryMs);
      this.retryTimer.unref();
    }
  }

  /** Storing works again: says so with an event (and to the listener). */
  private storeRecovered(): void {
    const outage = this.outage as StoreOutage;
    this.outage = null;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.onStoreState?.('recovered', outage);
    const until = new Date().toISOString();
    this.publish({
      severity: outage.dropped > 0 ? 'failure' : 'warning',
      scope: STORE_OUTAGE_SCOPE,
      summary:
        outage.dropped > 0
          ? `${outage.dropped} events lost: the state database could not store them`
          : 'events stored late: the state database could not store them for a while',
      detail: `from ${outage.since} to ${until}: ${outage.error}`,
      payload: { since: outage.since, until, error: outage.error, held: outage.heldMax, dropped: outage.dropped },
    });
  }

  private fanOut(batch: Pending[]): void {
    // One encoded buffer per distinct filter, written as is to every subscriber with it.
    const byFilter = new Map<string, Buffer>();
    for (const sub of this.subscribers) {
      const key = filterKey(sub.filter);
      let frames = byFilter.get(key);
      if (frames === undefined) {
        let text = '';
        for (const p of batch) {
          if (passes(sub.filter, p.severity as Severity, p.scope, p.proposalId ?? null)) {
            p.frame ??= `id: ${p.id}\ndata: ${p.data}\n\n`;
            text += p.frame;
          }
        }
        frames = Buffer.from(text, 'utf8');
        byFilter.set(key, frames);
      }
      if (frames.length > 0) sub.receive(frames);
    }
  }

  /**
   * Flushes and stops scheduling; later publishes are stored synchronously. Events that cannot
   * be stored by then are reported to the listener (`closed-unstored`), not thrown.
   */
  close(): void {
    this.tryFlush();
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    if (this.outage && this.pending.length > 0) this.onStoreState?.('closed-unstored', { ...this.outage, held: this.pending.length });
  }

  /** ISO timestamp, rebuilt at most once per millisecond (events come in bursts). */
  private now(): string {
    const ms = Date.now();
    if (ms !== this.lastTsMs) {
      this.lastTsMs = ms;
      this.lastTs = new Date(ms).toISOString();
    }
    return this.lastTs;
  }

  /**
   * The event's JSON, members in the documented order. Assembled by hand around
   * JSON.stringify of the variable parts: the same text as JSON.stringify(event), in a
   * fraction of the time on the per-line hot path.
   */
  private serialize(e: BusEvent): string {
    let payload: string;
    if (e.payload === this.lastPayload) {
      payload = this.lastPayloadJson;
    } else if (Object.isFrozen(e.payload)) {
      // A frozen payload cannot change between two events: its JSON can be reused.
      this.lastPayload = e.payload;
      payload = this.lastPayloadJson = JSON.stringify(e.payload);
    } else {
      payload = JSON.stringify(e.payload);
    }
    return (
      `{"id":"${e.id}","ts":"${e.ts}","severity":"${e.severity}","scope":${JSON.stringify(e.scope)}` +
      `,"summary":${JSON.stringify(e.summary)},"detail":${e.detail === null ? 'null' : JSON.stringify(e.detail)}` +
      `,"payload":${payload}}`
    );
  }
}
