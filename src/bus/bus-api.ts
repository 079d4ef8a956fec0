/**
 * What the service's parts need from the event bus (spec: What the service does, item 3;
 * api-decisions.md, Events), implemented twice:
 *
 * - {@link EventBus} (bus.ts) on the embedded SQLite state database: ids handed out at publish,
 *   events stored once per event-loop turn and delivered as they are stored;
 * - ClusterBus (cluster-bus.ts) on PostgreSQL, shared by the instances of a cluster
 *   (cluster.md, Events): ids handed out by the database in commit order, and every instance
 *   delivers every instance's events by reading the log after a wake-up.
 *
 * Reads may be asynchronous (the cluster's are); callers await them.
 */
import type { BusEvent, EventFilter, EventInput } from './event.js';
import type { EventRow } from './local-event-log.js';
import type { StorageOutage } from './storage-outage.js';

/**
 * A consumer of stored events (the event stream hub). Receives batches of stored rows, ids
 * ascending, each id once; the array is shared: never modify it. Must not throw nor block.
 */
export type BusSubscriber = (batch: readonly EventRow[]) => void;

/** The event bus as its producers and consumers use it. */
export interface Bus {
  /**
   * Publishes one event: synchronous and cheap, callable from any code on the main thread.
   * Never throws for the state database: an event it cannot store yet is held and retried.
   */
  publish(input: EventInput): void;
  /**
   * Publishes one event and stores it before resolving: for answers that carry the event's id.
   * @throws the state database's error when it cannot be stored; the event is then withdrawn
   *   (never stored nor delivered).
   */
  publishStored(input: EventInput): BusEvent | Promise<BusEvent>;
  /**
   * Adds a subscriber, which receives exactly the events with an id greater than `headId`:
   * callers replay up to `headId` from the store and lose or duplicate nothing.
   */
  subscribe(sub: BusSubscriber): { headId: number; unsubscribe: () => void };
  /** The id after which subscribers receive every event now (what a new subscriber's replay ends at). */
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
  /** The newest `limit` stored events passing `filter`, ascending. */
  readNewest(limit: number, filter: EventFilter): EventRow[] | Promise<EventRow[]>;
  /**
   * Tells `fn` of each job one of whose events the log dropped because the job is no longer
   * recorded `running` (event.ts JobGuard): another instance judged this one dead and marked the
   * job `lost`. The supervisor then stops the job without publishing anything more for it.
   */
  onFenced(fn: (proposalId: string) => void): void;
  /** Stores what is queued now, where the back end can (a best effort before shutdown steps). */
  flush(): void;
  /** Stores what is queued, then stops; events that cannot be stored are reported, not thrown. */
  close(): void | Promise<void>;
}
