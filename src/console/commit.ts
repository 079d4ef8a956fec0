/**
 * One write of the console's state: the database changes and the events they emit commit
 * in a single SQLite transaction, so an acknowledged write has its event stored too, and a
 * crash keeps both or neither.
 */
import type { EventBus, StagedEvents } from '../bus/bus.js';
import type { BusEvent, EventInput } from '../bus/event.js';
import type { Db } from '../state/db.js';

/** What a write returns: its result and the events to publish, in order. */
export interface Written<T> {
  readonly result: T;
  readonly events: readonly EventInput[];
}

/**
 * Runs `write` (synchronous database work) in one transaction, with its events stored in the
 * same transaction ({@link EventBus.stage}), and delivers the events to stream clients only
 * once the transaction committed: a commit that fails (disk full) leaves neither the state nor
 * events that anyone saw. Events others queued meanwhile are stored with it, or queued again.
 * @returns the result and the published events (with their ids).
 * @throws whatever `write`, the event log or the commit throws; the transaction is then rolled
 *   back and nothing is delivered.
 */
export function commitWithEvents<T>(db: Db, bus: EventBus, write: () => Written<T>): { result: T; events: BusEvent[] } {
  let staged: StagedEvents | undefined;
  try {
    const result = db.transaction(() => {
      const out = write();
      staged = bus.stage(out.events);
      return out.result;
    })();
    bus.settle(staged as StagedEvents, true);
    return { result, events: [...(staged as StagedEvents).events] };
  } catch (err) {
    if (staged) bus.settle(staged, false);
    throw err;
  }
}

/** Now as ISO-8601 UTC with milliseconds. */
export const nowIso = (): string => new Date().toISOString();
