/**
 * One write of the console's state on PostgreSQL: the database changes and the events they emit
 * commit in a single transaction of the state store, so an acknowledged write has its event
 * stored too, and a crash keeps both or neither (cluster.md: "A console write and its events
 * still commit together or not at all").
 */
import { eventDraft } from '../../bus/cluster-bus.js';
import type { BusEvent } from '../../bus/event.js';
import type { StateCommitter, StateStore, StateWrite } from '../state-store.js';

/**
 * The committer of the shared PostgreSQL store (cluster.md, Events and "Under faults"): the
 * write's events are appended by the transaction's last statement, sent with its COMMIT in one
 * round trip (EventStore.appendOnCommit: the log's sequencer is never held while the database
 * waits for this instance), so their ids are assigned in commit order across instances; once
 * committed, the bus is woken to deliver them, and `onCommitted` tells the other instances that
 * console state changed.
 */
export class PgCommitter implements StateCommitter {
  constructor(
    readonly store: StateStore,
    private readonly bus: { wake(): void },
    private readonly onCommitted: () => void = () => {},
  ) {}

  async commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }> {
    const out = await this.store.transaction(async (tx) => {
      const w = await write(tx);
      return { result: w.result, appended: tx.events.appendOnCommit(w.events.map(eventDraft)) };
    });
    // A console write's events carry no guard: none is dropped.
    const events = (await out.appended).filter((e): e is BusEvent => e !== null);
    this.bus.wake();
    this.onCommitted();
    return { result: out.result, events };
  }
}
