// One write of the console's state on PostgreSQL: its changes and events commit in one transaction (cluster.md).
import { eventDraft } from '../../bus/cluster-bus.js';
import type { BusEvent } from '../../bus/event.js';
import type { StateCommitter, StateStore, StateWrite } from '../state-store.js';

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
}
