// Memory toggles (spec: Events); the engine store's {@link MemoryToggleSource}, `enabled` in `GET /api/memory`.
import type { MemoryToggleSource } from '../engine/store.js';
import type { EventInput } from '../bus/event.js';
import type { MemoryToggleRecord, StateCommitter } from '../state/state-store.js';
import { withExtra } from './decision.js';
import { nowIso } from './now.js';

/** Default scope of memory toggle events. */
export const MEMORY_SCOPE = 'engine/memory';

/** The toggle's event: `Memory entry enabled|disabled: <id>`, info, payload entry_id, on, then extra members. */
export function memoryToggleEvent(entryId: string, on: boolean, scope: string, extra?: Readonly<Record<string, unknown>>): EventInput {
  return {
    severity: 'info',
    scope,
    summary: `Memory entry ${on ? 'enabled' : 'disabled'}: ${entryId}`,
    detail: null,
    payload: withExtra({ entry_id: entryId, on }, extra),
  };
}

export class MemoryToggles implements MemoryToggleSource {
  private changes = 0;
  private readonly current = new Map<string, boolean>();
  /** Each entry's row version: the mirror takes only newer rows (cluster.md, "Under faults"). */
  private readonly versions = new Map<string, number>();

  private constructor(private readonly state: StateCommitter) {}

  /** Loads the recorded toggles. @throws the state store's errors. */
  static async load(state: StateCommitter): Promise<MemoryToggles> {
    const toggles = new MemoryToggles(state);
    for (const r of await state.store.memoryToggles.list()) toggles.remember(r);
    return toggles;
  }

  /** Reads the toggles again (cluster mode); the version changes when they did. @throws the state store's errors. */
  async reload(): Promise<void> {
    let moved = false;
    for (const r of await this.state.store.memoryToggles.list()) moved = this.remember(r) || moved;
    if (moved) this.changes++;
  }

  /** Takes a committed row unless the mirror's is as new (it never moves backwards); @returns whether it did. */
  private remember(r: MemoryToggleRecord): boolean {
    if ((this.versions.get(r.entryId) ?? 0) >= r.version) return false;
    this.versions.set(r.entryId, r.version);
    this.current.set(r.entryId, r.on);
    return true;
  }

  /** @inheritdoc Changes on every toggle. */
  version(): number {
    return this.changes;
  }

  /** @inheritdoc */
  toggles(): ReadonlyMap<string, boolean> {
    return this.current;
  }

  /** Records a toggle and emits its event in `scope`; the caller checks the entry exists. @returns the event id. */
  async toggle(t: { entryId: string; on: boolean; scope: string; extra?: Readonly<Record<string, unknown>> }): Promise<string> {
    const at = nowIso();
    const { result, events } = await this.state.commit(async (tx) => {
      const row = await tx.memoryToggles.record({ entryId: t.entryId, on: t.on, scope: t.scope, extra: t.extra ?? {}, at });
      return { result: row, events: [memoryToggleEvent(t.entryId, t.on, t.scope, t.extra)] };
    });
    if (this.remember(result)) this.changes++;
    return (events[0] as { id: string }).id;
  }
}
