// What the service needs from the event bus (api-decisions.md, "Events"), implemented by EventBus (bus.ts,
// SQLite) and ClusterBus (cluster-bus.ts; cluster.md, "Events"), whose reads are asynchronous.
import type { BusEvent, EventFilter, EventInput, JobGuard, Severity } from './event.js';
import type { FrameBlock } from './frames.js';
import type { EventRow } from './local-event-log.js';
import type { FrameBlockReader } from './replay-cache.js';
import type { StorageOutage } from './storage-outage.js';

/**
 * A consumer of stored batches, ids ascending, each id once; the array is shared (never modify it). `frames`, where
 * the back end made them off the main thread (SQLite's event writer thread), are the batch's Server-Sent Events
 * frames, event `i` ending at `frames.ends[i]`: views of memory the thread writes again, read only during the call
 * (copy what is kept). Must not throw nor block.
 */
export type BusSubscriber = (batch: readonly EventRow[], frames?: FrameBlock) => void;

/** The event bus as its producers and consumers use it. */
export interface Bus {
  /** Publishes one event, synchronously, from any main-thread code; never throws for the database (held and retried). */
  publish(input: EventInput): void;
  /**
   * {@link publish} for an event whose JSON but its id and time was made elsewhere (event-json.ts eventTail): a job's
   * line, encoded on the job I/O thread (supervisor/line-event.ts); where the bus takes it (both back ends'). `severity`
   * and `scope` repeat the tail's, for the filters; `proposalId` and `guard` as in EventInput. Positional: no object per line.
   */
  publishEncoded?(severity: Severity, scope: string, tail: string, proposalId: string, guard: JobGuard | undefined): void;
  /** Publishes one event and stores it before resolving (answers carry its id). @throws the database's error; the event is withdrawn. */
  publishStored(input: EventInput): BusEvent | Promise<BusEvent>;
  /** Adds a subscriber that receives exactly the events after `headId`, so callers replay up to it and lose nothing. */
  subscribe(sub: BusSubscriber): { headId: number; unsubscribe: () => void };
  /** The id a new subscriber's replay ends at. */
  flushedHead(): number;
  /** Id of the newest event delivered or handed out (0 when none). */
  readonly lastId: number;
  /** Events published and not stored yet (the supervisor holds the jobs' output past a bound). */
  readonly backlog: number;
  /** Events kept in the state database (approximate). */
  readonly storedCount: number;
  /** The current period of failing stores, or null when events are stored. */
  readonly storageOutage: Readonly<StorageOutage> | null;
  /** Stored events after `sinceId` (and at most `upTo`) passing `filter`, ascending, at most `limit`. */
  readAfter(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[] | Promise<EventRow[]>;
  /** {@link readAfter}'s events up to a delivered id `upTo`, as Server-Sent Events frames (frames.ts), one string per event: a stream's replay. */
  readFramesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): readonly string[] | Promise<readonly string[]>;
  /** Unfiltered {@link readFramesAfter} made off the main thread, as one block of bytes, where the back end can (SQLite). */
  readonly readFrameBlock?: FrameBlockReader;
  /** The newest `limit` stored events passing `filter`, ascending. */
  readNewest(limit: number, filter: EventFilter): EventRow[] | Promise<EventRow[]>;
  /** Tells `fn` of each job whose event was dropped as it is no longer `running` (judged dead elsewhere); the supervisor stops it. */
  onFenced(fn: (proposalId: string) => void): void;
  /** Stores what is queued, where the back end can (best effort before shutdown steps). */
  flush(): void;
  /**
   * {@link flush} without blocking the main thread: resolves `true` once every event queued before is stored and
   * delivered, or its store failed (held for the retry); `false` when `limitMs` (milliseconds) passed first (a writer
   * that does not answer: the events stay queued for {@link close}). Never rejects. Where absent (the cluster's bus),
   * {@link flush} does not block.
   */
  storeQueued?(limitMs: number): Promise<boolean>;
  /** Stores what is queued, then stops; unstorable events are reported, not thrown. */
  close(): void | Promise<void>;
}
