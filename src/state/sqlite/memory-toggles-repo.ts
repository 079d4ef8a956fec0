// Memory toggles: every toggle is logged; `memory_toggles` holds the last per entry (`GET /api/memory`'s `enabled`).
import type { Db } from './db.js';
import type { MemoryToggleRecord } from '../records.js';

export class MemoryTogglesRepo {
  private readonly allStmt;
  private readonly setStmt;
  private readonly logStmt;

  constructor(db: Db) {
    this.allStmt = db.prepare<[], { entry_id: string; enabled: number; version: number }>('SELECT entry_id, enabled, version FROM memory_toggles');
    this.setStmt = db.prepare<[string, number, string], { version: number }>(
      `INSERT INTO memory_toggles (entry_id, enabled, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (entry_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at, version = version + 1
       RETURNING version`,
    );
    this.logStmt = db.prepare('INSERT INTO memory_toggle_log (entry_id, enabled, scope, extra, toggled_at) VALUES (?, ?, ?, ?, ?)');
  }

  /** The last toggle of every toggled entry. */
  all(): Map<string, boolean> {
    return new Map(this.allStmt.all().map((r) => [r.entry_id, r.enabled !== 0]));
  }

  /** The last toggle of every toggled entry, with its version. */
  list(): MemoryToggleRecord[] {
    return this.allStmt.all().map((r) => ({ entryId: r.entry_id, on: r.enabled !== 0, version: r.version }));
  }

  /** Records one toggle. Call inside the caller's transaction. @returns the entry's row as it is now. */
  record(t: { entryId: string; on: boolean; scope: string; extra: object; at: string }): MemoryToggleRecord {
    const { version } = this.setStmt.get(t.entryId, t.on ? 1 : 0, t.at) as { version: number };
    this.logStmt.run(t.entryId, t.on ? 1 : 0, t.scope, JSON.stringify(t.extra), t.at);
    return { entryId: t.entryId, on: t.on, version };
  }
}
