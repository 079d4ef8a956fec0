// The in-process event bus on SQLite (api-decisions.md, "Events"): queued events are stored in one transaction, then
// delivered as one batch, flushes `flushIntervalMs` apart; nothing unstored is delivered (held, bounded, retried:
// storage-outage.ts). With a writer thread (LocalEventLog.writesLater) they are stored there, one append at a time.
// Here: publishing, a console write's events (stage, settle), subscriptions and reads; the storing in event-queue.ts.
import type { BusEvent, EventFilter, EventInput, JobGuard, Severity } from './event.js';
import { EventJson } from './event-json.js';
import type { Bus, BusSubscriber } from './bus-api.js';
import { type EventRow, type LocalEventLog, whileQuiet } from './local-event-log.js';
import { eventRow, LineRow, type EventBusOptions, type Pending, type StagedEvents } from './bus-options.js';
import type { FrameBlockReader } from './replay-cache.js';
import { UnsettledStages } from './stored-waiters.js';
import { EventQueue } from './event-queue.js';

export { STORAGE_OUTAGE_SCOPE, type StorageOutage, type StorageStateListener } from './storage-outage.js';
export type { Bus, BusSubscriber } from './bus-api.js';
export type { EventBusOptions, Pending, PublishCounter, StagedEvents } from './bus-options.js';

/** The bus on the embedded SQLite state database (see the module's comment). */
export class EventBus extends EventQueue implements Bus {
  private readonly json = new EventJson();
  private readonly stages = new UnsettledStages();
  /** See {@link Bus.readFrameBlock}: only ids already delivered are asked for, so nothing queued needs a flush. */
  readonly readFrameBlock?: FrameBlockReader;

  constructor(log: LocalEventLog, options: EventBusOptions = {}) {
    super(log, options);
    if (options.readFrameBlock) this.readFrameBlock = options.readFrameBlock;
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

  /** {@link settle}'s work; the stage counts as settled after it, whatever it threw. */
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

  /** A published event (not a job's line) and its row, with the next id. */
  private make(input: EventInput): { event: BusEvent; row: Pending } {
    this.guards.queued(input.guard !== undefined);
    this.heads.plain = this.log.takeId();
    return eventRow(this.json, this.heads.plain, input);
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
    if (this.later) return this.heads.stored;
    this.tryFlush();
    return this.lastId;
  }

  /** Events currently kept in the state database (approximate between retention passes). */
  get storedCount(): number {
    return this.log.size + this.backlog;
  }

  /** See {@link Bus.readAfter}; flushes first (here). */
  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[] | Promise<EventRow[]> {
    return this.afterPublished(() => this.log.after(sinceId, limit, filter, upTo));
  }

  /** See {@link Bus.readFramesAfter}; flushes first only when an event up to `upTo` is still queued. */
  readFramesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): string[] {
    // A replay reads up to an id delivered: a flush per page would commit the jobs' lines a few at a time.
    if ((this.pending[0]?.id ?? Infinity) <= upTo) this.tryFlush();
    return this.log.framesAfter(sinceId, limit, filter, upTo);
  }

  /** See {@link Bus.readNewest}; flushes first (here). */
  readNewest(limit: number, filter: EventFilter): EventRow[] | Promise<EventRow[]> {
    return this.afterPublished(() => this.log.newest(limit, filter));
  }

  /** Runs `read` once every event published (but jobs' lines, with the writer thread) is stored. */
  private afterPublished<T>(read: () => T): T | Promise<T> {
    if (this.later && this.heads.plainUnstored) return this.whenPublishedStored().then(read);
    if (!this.later) this.tryFlush();
    return read();
  }

  /**
   * Resolves once every event published before, but a job's line, is stored or its store failed (the writer thread
   * stores them after their publication): a read of the events then sees them. Waits only while the thread has such
   * an event queued.
   */
  private async whenPublishedStored(): Promise<void> {
    if (this.later && this.heads.plainUnstored) await this.whenStored(this.heads.plain);
  }

  /** See {@link Bus.onFenced}. */
  onFenced(fn: (proposalId: string) => void): void {
    this.guards.onFenced(fn);
  }
}
