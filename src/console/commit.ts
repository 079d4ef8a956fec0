/**
 * One write of the console's state: the database changes and the events they emit commit
 * in a single transaction of the state store, so an acknowledged write has its event stored
 * too, and a crash keeps both or neither (cluster.md: "A console write and its events still
 * commit together or not at all").
 */
import type { EventBus, StagedEvents } from '../bus/bus.js';
import { eventDraft } from '../bus/cluster-bus.js';
import type { BusEvent, EventInput } from '../bus/event.js';
import type { StateStore, StateTx } from '../state/state-store.js';

/** What a write returns: its result and the events to publish, in order. */
export interface Written<T> {
  readonly result: T;
  readonly events: readonly EventInput[];
}

/** A write's database work, done through the repositories of its transaction. */
export type StateWrite<T> = (tx: StateTx) => Promise<Written<T>>;

/**
 * Commits console writes with their events, on one back end of the state store. The console's
 * services (src/console) go through it and never through the database themselves.
 */
export interface StateCommitter {
  /** The state store the writes go to (reads go to it directly). */
  readonly store: StateStore;
  /**
   * Runs `write` in one transaction with its events stored in it, and delivers the events to
   * stream clients only once the transaction committed: a commit that fails (disk full) leaves
   * neither the state nor events that anyone saw.
   * @returns the result and the published events (with their ids), in order.
   * @throws whatever `write`, the event log or the commit throws; the transaction is then
   *   rolled back and nothing is delivered.
   */
  commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }>;
}

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
}

/**
 * The committer of the shared PostgreSQL store (cluster.md, Events): the write's events are
 * appended last in its transaction (the log's sequencer is held from the append to the commit),
 * so their ids are assigned in commit order across instances; once committed, the bus is woken
 * to deliver them, and `onCommitted` tells the other instances that console state changed.
 */
export class SharedCommitter implements StateCommitter {
  constructor(
    readonly store: StateStore,
    private readonly bus: { wake(): void },
    private readonly onCommitted: () => void = () => {},
  ) {}

  async commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }> {
    const out = await this.store.transaction(async (tx) => {
      const w = await write(tx);
      return { result: w.result, events: await tx.events.append(w.events.map(eventDraft)) };
    });
    this.bus.wake();
    this.onCommitted();
    return out;
  }
}

/** Now as ISO-8601 UTC with milliseconds. */
export const nowIso = (): string => new Date().toISOString();
