/**
 * Memory toggles (spec: What the service does, item 4; Events table, "memory toggle"), and
 * the engine store's {@link MemoryToggleSource}: `GET /api/memory` shows the last toggle of
 * each entry as `enabled`.
 */
import type { EventBus } from '../bus/bus.js';
import type { MemoryToggleSource } from '../engine/store.js';
import type { Db } from '../state/db.js';
import type { MemoryTogglesRepo } from '../state/memory-toggles-repo.js';
import { commitWithEvents, nowIso } from './commit.js';
import { memoryToggleEvent } from './memory-toggle.js';

export class MemoryToggles implements MemoryToggleSource {
  private readonly current: Map<string, boolean>;
  private changes = 0;

  constructor(
    private readonly db: Db,
    private readonly bus: EventBus,
    private readonly repo: MemoryTogglesRepo,
  ) {
    this.current = repo.all();
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
  toggle(t: { entryId: string; on: boolean; scope: string; extra?: Readonly<Record<string, unknown>> }): string {
    const at = nowIso();
    const { events } = commitWithEvents(this.db, this.bus, () => {
      this.repo.record({ entryId: t.entryId, on: t.on, scope: t.scope, extra: t.extra ?? {}, at });
      return { result: undefined, events: [memoryToggleEvent(t.entryId, t.on, t.scope, t.extra)] };
    });
    this.current.set(t.entryId, t.on);
    this.changes++;
    return (events[0] as { id: string }).id;
  }
}
