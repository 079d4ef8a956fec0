// The event bus of cluster mode (cluster.md, "Events"). Each turn the queue is appended to the shared log in one
// transaction (ids in commit order; appends run one at a time, in publish order: on an ordered log the next is sent
// while one runs). Delivery reads after the head, in id order with no gap, woken by own appends, NOTIFY and a
// `pollMs` poll for missed notifications.
import type { Bus, BusSubscriber } from './bus-api.js';
import { NO_FILTER, proposalOf, type BusEvent, type EventFilter, type EventInput, type JobGuard, type Severity } from './event.js';
import { EventJson, eventHead } from './event-json.js';
import { frameOf, type FrameBlock } from './frames.js';
import type { EventRow } from './local-event-log.js';
import { EMPTY_PAYLOAD, eventDraft, type FramedAppend, type SharedEventDraft, type SharedEventLog } from './shared-event-log.js';
import { StorageRetry, type StorageOutage, type StorageStateListener } from './storage-outage.js';

export interface ClusterBusOptions {
  /** Bound on the events held in memory while they cannot be stored. */
  readonly maxUnstored: number;
  /** Time between attempts to store held events, and between reads after a failed one, ms. */
  readonly retryMs: number;
  /** Time between reads of the log when nothing woke the bus, ms. */
  readonly pollMs: number;
  readonly onStorageState?: StorageStateListener;
  /** Counts published events (metrics); -1 for one withdrawn. */
  readonly onCount?: (severity: Severity, delta: 1 | -1) => void;
}

const APPEND_BATCH = 2000;
const READ_PAGE = 2000;
/** System status's stored count is refreshed this often, ms. */
const COUNT_EVERY_MS = 5000;

interface Queued {
  readonly draft: SharedEventDraft;
  readonly settle?: (event: BusEvent | null, err?: unknown) => void;
}

/** The bus of one instance of a cluster (see the module's comment). */
export class ClusterBus implements Bus {
  private pending: Queued[] = [];
  private appending: Promise<void> | null = null;
  /** Appends sent and not handled yet, oldest first (one, or two on an ordered log); their events lead `pending`. */
  private sent: { readonly batch: readonly Queued[]; readonly headBefore: number; readonly answer: Promise<FramedAppend> }[] = [];
  /** Events of `pending` in {@link sent}. */
  private sentCount = 0;
  private flushScheduled = false;
  private readonly subscribers = new Set<BusSubscriber>();
  private readonly fencedListeners: ((proposalId: string) => void)[] = [];
  /** The newest id delivered: every smaller one has been. */
  private head: number;
  private reading = false;
  private readAgain = false;
  private readonly poll: NodeJS.Timeout;
  private readonly retry: StorageRetry;
  private readonly onCount: NonNullable<ClusterBusOptions['onCount']>;
  private stored = 0;
  private countedAt = 0;
  private closed = false;
  /** Source number and count: this bus's event tokens (SharedEventDraft.token). */
  private source = 0;
  private count = 0;
  /** While events of an unknown-outcome append wait: the log's id before it and the last such token. */
  private unknownOutcome: { after: number; upTo: number } | null = null;
  /** Stamps encoded lines' times (one Date a millisecond). */
  private readonly clock = new EventJson();

  private constructor(
    private readonly log: SharedEventLog,
    head: number,
    options: ClusterBusOptions,
  ) {
    this.head = head;
    this.retry = new StorageRetry(options.maxUnstored, options.retryMs, () => this.retryAppend(), options.onStorageState);
    this.onCount = options.onCount ?? (() => {});
    this.poll = setInterval(() => this.wake(), options.pollMs);
    this.poll.unref();
  }

  /** Starts delivering after the newest stored event. @throws the database's error. */
  static async open(log: SharedEventLog, options: ClusterBusOptions): Promise<ClusterBus> {
    const bus = new ClusterBus(log, await log.lastId(), options);
    bus.source = await log.newSource();
    bus.stored = await log.count();
    bus.countedAt = Date.now();
    return bus;
  }

  get storageOutage(): Readonly<StorageOutage> | null {
    return this.retry.outage;
  }

  publish(input: EventInput): void {
    this.enqueue({ draft: eventDraft(input, this.nextToken()) });
  }

  publishStored(input: EventInput): Promise<BusEvent> {
    return new Promise((resolve, reject) => {
      this.enqueue({ draft: eventDraft(input, this.nextToken()), settle: (event, err) => (event ? resolve(event) : reject(err)) }, true);
    });
  }

  /** {@link publish} for a job's line whose JSON but its id and time was made on the job I/O thread (bus-api.ts). */
  publishEncoded(severity: Severity, scope: string, tail: string, proposalId: string, guard: JobGuard | undefined): void {
    this.enqueue({ draft: { ts: this.clock.now(), severity, scope, summary: '', detail: null, payload: EMPTY_PAYLOAD, proposalId, guard, token: this.nextToken(), tail } });
  }

  /** Source in the high bits, a count below (2^32 events a start). */
  private nextToken(): number {
    return this.source * 0x1_0000_0000 + ++this.count;
  }

  private enqueue(q: Queued, now = false): void {
    this.pending.push(q);
    this.onCount(q.draft.severity, 1);
    // While appends fail only the retry timer tries, except for a publish that waits for its answer.
    if (now || this.closed) void this.append();
    else if (this.retry.outage === null) this.scheduleFlush();
  }

  /** The retry timer's attempt: what is held, or the period's report when nothing is. */
  private retryAppend(): void {
    if (this.pending.length === 0) {
      const report = this.retry.attemptReport();
      if (report) this.pending.push({ draft: eventDraft(report, this.nextToken()) });
    }
    void this.append();
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      if (this.retry.outage === null) void this.append();
    });
  }

  /** Appends what is queued, one transaction at a time (on an ordered log, the next is sent while one runs). */
  private append(): Promise<void> {
    if (this.appending !== null) {
      this.sendNext();
      return this.appending;
    }
    this.appending = this.appendQueued().finally(() => {
      this.appending = null;
      if (this.pending.length > 0 && this.retry.outage === null) this.scheduleFlush();
    });
    return this.appending;
  }

  /**
   * Sends the next batch of what is queued and not sent: when none is under way, or on an ordered log (its
   * SharedEventLog.ordered) when one is and the log is not failing. Its events stay at the head of `pending` until handled.
   */
  private sendNext(): void {
    const running = this.sent.length;
    if (running >= (this.log.ordered === true ? 2 : 1) || this.sentCount >= this.pending.length) return;
    if (running > 0 && this.retry.outage !== null) return;
    const batch = this.pending.slice(this.sentCount, this.sentCount + APPEND_BATCH);
    this.sentCount += batch.length;
    const drafts = batch.map((q) => q.draft);
    const retryAfter = this.unknownOutcome?.after ?? null;
    // Framed where stored when the log can (the event append thread): the streams then copy bytes.
    const answer = this.log.appendFramed !== undefined ? this.log.appendFramed(drafts, retryAfter) : this.log.append(drafts, retryAfter).then((events) => ({ events, frames: null }));
    // Handled in order by appendQueued, which may be awaiting an earlier one.
    answer.catch(() => {});
    this.sent.push({ batch, headBefore: this.head, answer });
  }

  private async appendQueued(): Promise<void> {
    for (;;) {
      this.sendNext();
      const sent = this.sent[0];
      if (sent === undefined) return;
      const { batch, headBefore } = sent;
      let appended: FramedAppend;
      try {
        appended = await sent.answer;
      } catch (err) {
        // The append sent after it was not run (an ordered log runs none after a failed one): its events are held with
        // this one's. Nothing is sent meanwhile (the log would run it, before the held events): `sent` stays full while
        // awaited, and without a follower nothing is awaited here.
        if (this.sent.length > 1) await Promise.allSettled(this.sent.slice(1).map((s) => s.answer));
        this.sent = [];
        this.sentCount = 0;
        // It may have committed anyway (connection lost around the commit): the retry looks its events up.
        const lastToken = batch[batch.length - 1]?.draft.token ?? 0;
        this.unknownOutcome = { after: Math.min(this.unknownOutcome?.after ?? headBefore, headBefore), upTo: Math.max(this.unknownOutcome?.upTo ?? 0, lastToken) };
        // Publishes waiting for their answer are refused and withdrawn; the others are held.
        const waiting = new Set(this.pending.filter((q) => q.settle));
        if (waiting.size > 0) {
          this.pending = this.pending.filter((q) => !waiting.has(q));
          for (const q of waiting) {
            this.onCount(q.draft.severity, -1);
            q.settle?.(null, err);
          }
        }
        this.retry.failed(err, this.pending);
        return;
      }
      this.sent.shift();
      this.sentCount -= batch.length;
      this.pending.splice(0, batch.length);
      this.appended(batch, appended);
    }
  }

  /**
   * Settles and delivers an append's events (`events[i]` is `batch[i]`'s, null where its guard dropped it), with the
   * stored ones' frames when made where they were stored.
   */
  private appended(batch: readonly Queued[], { events, frames }: FramedAppend): void {
    if (this.unknownOutcome !== null && (batch[batch.length - 1]?.draft.token ?? 0) >= this.unknownOutcome.upTo) this.unknownOutcome = null;
    const rows: EventRow[] = [];
    const fenced = new Set<string>();
    for (let i = 0; i < batch.length; i++) {
      const q = batch[i] as Queued;
      const e = events[i] ?? null;
      if (e !== null) {
        const { tail } = q.draft;
        // As console_append stored it: the id first, then the draft's JSON.
        rows.push({ id: Number(e.id), severity: e.severity, scope: e.scope, proposalId: proposalOf(q.draft), data: tail !== undefined ? eventHead(e.id, e.ts) + tail : JSON.stringify(e) });
      } else {
        // Dropped by its guard: its job is no longer running here (another instance marked it lost).
        this.onCount(q.draft.severity, -1);
        if (q.draft.guard) fenced.add(q.draft.guard.job);
      }
      q.settle?.(e, e === null ? new Error('the event was dropped: its job is no longer running') : undefined);
      q.draft.guard?.settled?.(e !== null);
    }
    this.stored += rows.length;
    for (const job of fenced) for (const fn of this.fencedListeners) fn(job);
    const report = this.retry.recovered();
    if (report) this.pending.push({ draft: eventDraft(report, this.nextToken()) });
    // Ids that follow the head mean nothing of another instance came between: deliver without reading back.
    if (rows.length > 0 && !this.deliver(rows, false, frames?.ids.length === rows.length ? frames : undefined)) this.wake();
  }

  onFenced(fn: (proposalId: string) => void): void {
    this.fencedListeners.push(fn);
  }

  /** Reads and delivers what the log holds after the head. */
  wake(): void {
    if (this.closed) return;
    if (this.reading) {
      this.readAgain = true;
      return;
    }
    this.reading = true;
    void this.readNew().finally(() => {
      this.reading = false;
    });
  }

  private async readNew(): Promise<void> {
    try {
      do {
        this.readAgain = false;
        for (;;) {
          const rows = await this.log.after(this.head, READ_PAGE, NO_FILTER);
          if (rows.length === 0) break;
          // Read from the log, the rows follow the head even past a gap (retention).
          this.deliver(rows, true);
          if (rows.length < READ_PAGE) break;
        }
      } while (this.readAgain && !this.closed);
      if (Date.now() - this.countedAt > COUNT_EVERY_MS) {
        this.countedAt = Date.now();
        this.stored = await this.log.count();
      }
    } catch {
      // The database is away: the poll reads again, from the same head.
    }
  }

  /**
   * Hands rows continuing the head to subscribers, skipping those delivered already (own appends and reads overlap).
   * @param read the rows were read after the head: nothing comes between.
   * @param frames the rows' frames (made where they were stored): handed on when every row is delivered.
   * @returns false when the rows do not continue the head.
   */
  private deliver(rows: readonly EventRow[], read = false, frames?: FrameBlock): boolean {
    let from = 0;
    while (from < rows.length && (rows[from] as EventRow).id <= this.head) from++;
    if (from === rows.length) return true;
    if (!read && (rows[from] as EventRow).id !== this.head + 1) return false;
    const fresh = from === 0 ? rows : rows.slice(from);
    this.head = (fresh[fresh.length - 1] as EventRow).id;
    const block = from === 0 ? frames : undefined;
    for (const sub of this.subscribers) sub(fresh, block);
    return true;
  }

  subscribe(sub: BusSubscriber): { headId: number; unsubscribe: () => void } {
    this.subscribers.add(sub);
    return { headId: this.head, unsubscribe: () => this.subscribers.delete(sub) };
  }

  flushedHead(): number {
    return this.head;
  }

  get lastId(): number {
    return this.head;
  }

  get backlog(): number {
    return this.pending.length;
  }

  get storedCount(): number {
    return this.stored + this.pending.length;
  }

  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): Promise<EventRow[]> {
    return this.log.after(sinceId, limit, filter, upTo);
  }

  async readFramesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): Promise<string[]> {
    return (await this.log.after(sinceId, limit, filter, upTo)).map(frameOf);
  }

  readNewest(limit: number, filter: EventFilter): Promise<EventRow[]> {
    return this.log.newest(limit, filter);
  }

  flush(): void {
    if (this.retry.outage === null) void this.append();
  }

  /** Appends what is queued (one attempt if the database is away), delivers, stops; unstored events go to the listener. */
  async close(): Promise<void> {
    await this.appending;
    if (this.pending.length > 0) await this.append();
    this.wake();
    while (this.reading) await new Promise((r) => setImmediate(r));
    this.closed = true;
    clearInterval(this.poll);
    this.retry.close(this.pending.length);
  }
}
