/**
 * The in-process event bus (spec: What the service does, item 3; api-decisions.md, Events).
 *
 * `publish` is synchronous: it assigns `id` and `ts`, serialises the event once and queues
 * it. Once per event-loop turn the queue is flushed: written to the state database in one
 * transaction, then fanned out to subscribers as pre-built Server-Sent Events frames, one
 * shared string per distinct filter. Producers never wait for a subscriber.
 */
import type { EventLog, EventRow } from '../state/event-log.js';
import {
  filterKey,
  passes,
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

const EMPTY_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({});

interface Pending extends EventRow {
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

  constructor(private readonly log: EventLog) {}

  /**
   * Publishes one event. Synchronous and cheap: callable from any code on the main thread.
   * @returns the event as stored, with its `id` (decimal string) and `ts`.
   */
  publish(input: EventInput): BusEvent {
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
    this.pending.push({ id, severity: input.severity, scope: input.scope, data: this.serialize(event), frame: undefined });
    this.published++;
    this.bySeverity[input.severity]++;
    for (const tap of this.taps) tap(event);
    if (this.closed || this.pending.length >= FLUSH_BATCH) {
      // Late events during shutdown (job exits) are stored at once; and a turn that brings
      // thousands of lines flushes every FLUSH_BATCH of them, so they die young instead of
      // surviving into the old generation while the turn goes on.
      this.flush();
    } else if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flushTick);
    }
    return event;
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
    this.flush();
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

  /** Stored events after `sinceId` (and at most `upTo`), ascending; flushes first. */
  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[] {
    this.flush();
    return this.log.after(sinceId, limit, filter, upTo);
  }

  /** The newest `limit` stored events passing `filter`, ascending; flushes first. */
  readNewest(limit: number, filter: EventFilter): EventRow[] {
    this.flush();
    return this.log.newest(limit, filter);
  }

  private readonly flushTick = (): void => {
    this.flushScheduled = false;
    this.flush();
  };

  /** Writes queued events to the database and delivers them to subscribers, now. */
  flush(): void {
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    // Stored before delivery: a client never sees an id that `GET /api/events` cannot return.
    this.log.append(batch);
    if (this.subscribers.size > 0) this.fanOut(batch);
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
          if (passes(sub.filter, p.severity as Severity, p.scope)) {
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

  /** Flushes and stops scheduling; later publishes are stored synchronously. */
  close(): void {
    this.flush();
    this.closed = true;
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
