/**
 * One write of the console's state: the database changes and the events they emit commit
 * in a single SQLite transaction (the bus is flushed inside it), so an acknowledged write
 * has its event stored too, and a crash keeps both or neither.
 */
import type { EventBus } from '../bus/bus.js';
import type { BusEvent, EventInput } from '../bus/event.js';
import type { Db } from '../state/db.js';

/** What a write returns: its result and the events to publish, in order. */
export interface Written<T> {
  readonly result: T;
  readonly events: readonly EventInput[];
}

/**
 * Runs `write` (synchronous database work) in one transaction, then publishes its events and
 * flushes the bus before the transaction commits. Publishing comes last, so a failing write
 * publishes nothing.
 * @returns the result and the published events (with their ids).
 * @throws whatever `write` or the event log throws; the transaction is then rolled back.
 */
export function commitWithEvents<T>(db: Db, bus: EventBus, write: () => Written<T>): { result: T; events: BusEvent[] } {
  return db.transaction(() => {
    const { result, events } = write();
    const published = events.map((e) => bus.publish(e));
    // Nested in this transaction (a savepoint): the events are stored with the state.
    bus.flush();
    return { result, events: published };
  })();
}

/** Now as ISO-8601 UTC with milliseconds. */
export const nowIso = (): string => new Date().toISOString();
