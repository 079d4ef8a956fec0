// The shared event log of cluster mode as its bus sees it (cluster.md, "Events"): the state store's appends and
// reads, or the event append thread's (state/pg/append-thread.ts), and the drafts appended.
import type { BusEvent, EventFilter, EventInput, JobGuard } from './event.js';
import { proposalOf } from './event.js';
import type { FrameBlock } from './frames.js';
import type { EventRow } from './local-event-log.js';

/** An event to append, without its id (the log assigns it), with its proposal and the job state it commits with (event.ts JobGuard). */
export type SharedEventDraft = Omit<BusEvent, 'id'> & {
  readonly proposalId?: string;
  readonly guard?: JobGuard;
  /** Unique to the event (its bus's source and count): a retried append does not store it twice. */
  readonly token?: number;
  /**
   * The event's JSON after its id and time, made on the job I/O thread (event-json.ts eventTail; a job's line):
   * stored and delivered as is; `summary`, `detail` and `payload` are then empty placeholders.
   */
  readonly tail?: string;
};

/** The shared event log (the state store's EventStore). Every method rejects with the database's error when it is away. */
export interface SharedEventLog {
  /**
   * Set when appends may be sent before the last one settled: each then runs only once the one before it succeeded;
   * one sent before the failure of an earlier one was heard of is not run, and rejects with {@link AppendNotRunError}.
   */
  readonly ordered?: boolean;
  /**
   * Appends events in one transaction with their job states; resolves to them with ids, null for one its guard dropped.
   * @param retryAfter set when some drafts were in an append of unknown outcome (connection lost around its
   *   commit): an id the log had reached before it; drafts stored then (found by token) are not stored again.
   */
  append(drafts: readonly SharedEventDraft[], retryAfter?: number | null): Promise<(BusEvent | null)[]>;
  /**
   * {@link append}, with the Server-Sent Events frames of the events stored (those not dropped, in the drafts' order),
   * made where they were stored (the event append thread): null when they could not be made. The bus prefers it.
   */
  appendFramed?(drafts: readonly SharedEventDraft[], retryAfter?: number | null): Promise<FramedAppend>;
  /** A number no other bus got (the source part of its events' tokens). */
  newSource(): Promise<number>;
  /** Events with `sinceId < id <= upTo` passing `filter`, ascending, at most `limit`. */
  after(sinceId: number, limit: number, filter: EventFilter, upTo?: number): Promise<EventRow[]>;
  /** The newest `limit` passing `filter`, ascending. */
  newest(limit: number, filter: EventFilter): Promise<EventRow[]>;
  /** The newest id handed out and committed (0 when none). */
  lastId(): Promise<number>;
  /** Rows stored now. */
  count(): Promise<number>;
}

/** An append's events (SharedEventLog.append) and the frames of those stored, event `i` of them ending at `frames.ends[i]`. */
export interface FramedAppend {
  readonly events: (BusEvent | null)[];
  readonly frames: FrameBlock | null;
}

/** An append not run because one sent before it failed (SharedEventLog.ordered): nothing of it was stored. */
export class AppendNotRunError extends Error {
  override name = 'AppendNotRunError';
  constructor() {
    super('not appended: an append sent before it failed');
  }
}

/** The payload of an event without one (shared: frozen). */
export const EMPTY_PAYLOAD: Readonly<Record<string, unknown>> = Object.freeze({});

/** An event to append, stamped now, with its bus's `token` when given. */
export function eventDraft(input: EventInput, token?: number): SharedEventDraft {
  // One literal with every field (absent ones undefined), as conditional spreads made each draft a slow object.
  return {
    ts: new Date().toISOString(),
    severity: input.severity,
    scope: input.scope,
    summary: input.summary,
    detail: input.detail ?? null,
    payload: input.payload ?? EMPTY_PAYLOAD,
    proposalId: proposalOf(input) ?? undefined,
    guard: input.guard,
    token,
  };
}
