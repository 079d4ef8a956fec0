/**
 * One write of the console's state on the embedded SQLite store: the database changes and the events they emit
 * commit in a single transaction of the state store, so an acknowledged write has its event
 * stored too, and a crash keeps both or neither (cluster.md: "A console write and its events
 * still commit together or not at all").
 */
import type { EventBus, StagedEvents } from '../../bus/bus.js';
import type { BusEvent, EventInput, JobStart } from '../../bus/event.js';
import type { StateCommitter, StateStore, StateWrite } from '../state-store.js';
import { stateDbFault } from './errors.js';

/**
 * The committer of the embedded SQLite store: the events are stored by the bus
 * ({@link EventBus.stage}) inside the store's transaction, with the events others queued
 * meanwhile, so the one event log of the process hands out ids in the order they are stored.
 * The store's event log must be the bus's (SqliteStateStoreOptions.eventLog).
 */
export class SqliteCommitter implements StateCommitter {
  constructor(
    readonly store: StateStore,
    private readonly bus: EventBus,
  ) {}

  async commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }> {
    let staged: StagedEvents | undefined;
    try {
      const result = await this.store.transaction(async (tx) => {
        const out = await write(tx);
        staged = this.bus.stage(out.events);
        return out.result;
      });
      this.bus.settle(staged as StagedEvents, true);
      return { result, events: [...(staged as StagedEvents).events] };
    } catch (err) {
      if (staged) this.bus.settle(staged, false);
      throw err;
    }
  }

  /**
   * The job's start rides on its spawn event through the bus (JobGuard.start): stored with the events queued before it,
   * on the event writer thread when there is one, so a launch under a flood of lines neither waits for that thread
   * nor stores the queue on this one. Resolves once stored; refused (withdrawn) when its append fails.
   */
  launch(start: JobStart, spawned: EventInput): Promise<BusEvent> {
    return new Promise<BusEvent>((resolve, reject) => {
      const event = this.bus.publish({
        ...spawned,
        guard: {
          job: start.job.proposalId,
          start,
          // Never dropped (no end rides on it). Told later: the bus may store at once, inside publish (closing).
          settled: () => queueMicrotask(() => resolve(event)),
          // A database fault as the state layer's error (507, 503), as a refused transaction's.
          refused: (err) => reject(stateDbFault(err) ?? err),
        },
      });
    });
  }
}
