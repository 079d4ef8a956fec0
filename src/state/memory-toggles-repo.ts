/**
 * Memory toggles (spec: What the service does, item 4): every toggle is logged, and
 * `memory_toggles` holds the last one per entry, which `GET /api/memory` shows as `enabled`.
 */
import type { Db } from './db.js';

export class MemoryTogglesRepo {
  private readonly allStmt;
  private readonly setStmt;
  private readonly logStmt;

  constructor(db: Db) {
    this.allStmt = db.prepare<[], { entry_id: string; enabled: number }>('SELECT entry_id, enabled FROM memory_toggles');
    this.setStmt = db.prepare(
      `INSERT INTO memory_toggles (entry_id, enabled, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (entry_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at`,
    );
    this.logStmt = db.prepare(
      'INSERT INTO memory_toggle_log (entry_id, enabled, scope, extra, toggled_at) VALUES (?, ?, ?, ?, ?)',
    );
  }

  /** The last toggle of every toggled entry. */
  all(): Map<string, boolean> {
    return new Map(this.allStmt.all().map((r) => [r.entry_id, r.enabled !== 0]));
  }

  /** Records one toggle. Call inside the caller's transaction. */
  record(t: { entryId: string; on: boolean; scope: string; extra: object; at: string }): void {
    this.setStmt.run(t.entryId, t.on ? 1 : 0, t.at);
    this.logStmt.run(t.entryId, t.on ? 1 : 0, t.scope, JSON.stringify(t.extra), t.at);
  }
}
