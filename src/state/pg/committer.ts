// One write of the console's state on PostgreSQL: its changes and events commit in one transaction (cluster.md).
import { eventDraft } from '../../bus/shared-event-log.js';
import type { BusEvent, EventInput, JobStart } from '../../bus/event.js';
import { writeJobStart, type StateCommitter, type StateStore, type StateWrite } from '../state-store.js';

/** The committer of the shared store (cluster.md, "Under faults"): events go with COMMIT in one round trip
 * (EventStore.appendOnCommit), then the bus is woken and `onCommitted` tells the other instances. */
export class PgCommitter implements StateCommitter {
  constructor(
    readonly store: StateStore,
    private readonly bus: { wake(): void },
    private readonly onCommitted: () => void = () => {},
  ) {}

  async commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }> {
    const out = await this.store.transaction(async (tx) => {
      const w = await write(tx);
      return { result: w.result, appended: tx.events.appendOnCommit(w.events.map((e) => eventDraft(e))) };
    });
    // A console write's events carry no guard: none is dropped.
    const events = (await out.appended).filter((e): e is BusEvent => e !== null);
    this.bus.wake();
    this.onCommitted();
    return { result: out.result, events };
  }

  async launch(start: JobStart, spawned: EventInput): Promise<BusEvent> {
    const { events } = await this.commit(async (tx) => {
      await writeJobStart(tx, start);
      return { result: undefined, events: [spawned] };
    });
    // Stored with COMMIT only while nothing fenced it: a new job's spawn event always is.
    return events[0] as BusEvent;
  }
}
