/**
 * Memory toggles (spec: What the service does, item 4; Events table, "memory toggle"), and
 * the engine store's {@link MemoryToggleSource}: `GET /api/memory` shows the last toggle of
 * each entry as `enabled`.
 */
import type { MemoryToggleSource } from '../engine/store.js';
import { nowIso, type StateCommitter } from './commit.js';
import { memoryToggleEvent } from './memory-toggle.js';

export class MemoryToggles implements MemoryToggleSource {
  private changes = 0;

  /** @param current the recorded toggles ({@link MemoryToggles.load}). */
  private constructor(
    private readonly state: StateCommitter,
    private readonly current: Map<string, boolean>,
  ) {}

  /** Loads the recorded toggles. @throws the state store's errors. */
  static async load(state: StateCommitter): Promise<MemoryToggles> {
    return new MemoryToggles(state, await state.store.memoryToggles.all());
  }

  /**
   * Reads the toggles again (cluster mode: another instance recorded one); the version changes
   * when they did. @throws the state store's errors (nothing is changed then).
   */
  async reload(): Promise<void> {
    const fresh = await this.state.store.memoryToggles.all();
    const same = fresh.size === this.current.size && [...fresh].every(([id, on]) => this.current.get(id) === on);
    if (same) return;
    this.current.clear();
    for (const [id, on] of fresh) this.current.set(id, on);
    this.changes++;
  }

  /** @inheritdoc Changes on every toggle. */
  version(): number {
    return this.changes;
  }

  /** @inheritdoc */
  toggles(): ReadonlyMap<string, boolean> {
    return this.current;
  }

  /**
   * Records a toggle and emits `Memory entry enabled|disabled: <id>` (info) in `scope`.
   * The caller checks that the entry exists.
   * @returns the id of the event.
   */
  async toggle(t: { entryId: string; on: boolean; scope: string; extra?: Readonly<Record<string, unknown>> }): Promise<string> {
    const at = nowIso();
    const { events } = await this.state.commit(async (tx) => {
      await tx.memoryToggles.record({ entryId: t.entryId, on: t.on, scope: t.scope, extra: t.extra ?? {}, at });
      return { result: undefined, events: [memoryToggleEvent(t.entryId, t.on, t.scope, t.extra)] };
    });
    this.current.set(t.entryId, t.on);
    this.changes++;
    return (events[0] as { id: string }).id;
  }
}
