// The SQLite event bus's options and shapes (bus.ts).
import { proposalOf, type BusEvent, type EventInput, type JobGuard, type Severity } from './event.js';
import { eventHead, type EventJson } from './event-json.js';
import type { EventRow } from './local-event-log.js';
import type { FrameBlockReader } from './replay-cache.js';
import type { StorageStateListener } from './storage-outage.js';

/** Told of each event counted as published (+1) or withdrawn before storing (-1), for the metrics. Must be cheap. */
export type PublishCounter = (severity: Severity, delta: 1 | -1) => void;

export interface EventBusOptions {
  /** Bound on the events held in memory while they cannot be stored (default 100,000). */
  readonly maxUnstored?: number;
  /** Time between attempts to store held events (default 1000 ms). */
  readonly retryMs?: number;
  /** Told when storing starts failing, works again, or the bus closes with events unstored. */
  readonly onStorageState?: StorageStateListener;
  /** Counts published events (metrics). */
  readonly onCount?: PublishCounter;
  /** Least time between flushes of a small queue, ms (default 0); a flush after a quiet period is never delayed. */
  readonly flushIntervalMs?: number;
  /** Replays' unfiltered reads off the main thread (state/sqlite/replay-thread.ts); without it they are read here. */
  readonly readFrameBlock?: FrameBlockReader;
}

/** Events of one write stored inside the caller's transaction ({@link EventBus.stage}), settled once it ends. */
export interface StagedEvents {
  /** The write's own events, with their ids. */
  readonly events: readonly BusEvent[];
  readonly rows: readonly Pending[];
  /** Events queued before the write and stored with it. */
  readonly carried: readonly Pending[];
  /** What the log stored of them all, when it dropped some (LocalEventLog.append). */
  readonly kept: readonly Pending[] | null;
}

/** A queued event: its row, as it will be stored. */
export type Pending = EventRow;

const EMPTY_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({});

/** The event published as `input` with id `id` and the time now, and its row as it will be stored. */
export function eventRow(json: EventJson, id: number, input: EventInput): { event: BusEvent; row: Pending } {
  const event: BusEvent = {
    id: String(id),
    ts: json.now(),
    severity: input.severity,
    scope: input.scope,
    summary: input.summary,
    detail: input.detail ?? null,
    payload: input.payload ?? EMPTY_PAYLOAD,
  };
  // One literal, guard or none: one shape for every row (a spread to add the guard made each line a slow object,
  // read again by the event log and the fan-out).
  const row: Pending = { id, severity: input.severity, scope: input.scope, proposalId: proposalOf(input), data: json.serialize(event), guard: input.guard };
  return { event, row };
}

/**
 * A job line's row as the job I/O thread encoded it (bus.ts publishEncoded): its JSON is `tail` behind the head of
 * `id` and `ts` (event-json.ts eventHead), joined only where `data` is read. Rows stored on the event writer thread
 * cross with the two parts (state/sqlite/append-wire.ts packRows), which the thread joins: the main thread, which never reads
 * their JSON (the thread frames them), does not make a copy of each line to send it.
 */
export class LineRow implements EventRow {
  private joined: string | null = null;

  constructor(
    readonly id: number,
    readonly severity: Severity,
    readonly scope: string,
    readonly proposalId: string,
    /** The event's time (ISO 8601, ms), as in its head. */
    readonly ts: string,
    /** The event's JSON after its head. */
    readonly tail: string,
    readonly guard: JobGuard | undefined,
  ) {}

  /** Whether `data` was read (the two parts are joined then, and sent as one). */
  get isJoined(): boolean {
    return this.joined !== null;
  }

  /** The event's whole JSON. */
  get data(): string {
    this.joined ??= eventHead(this.id, this.ts) + this.tail;
    return this.joined;
  }
}
