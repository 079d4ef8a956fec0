// Counts of raised sanctioned fallbacks per name, reported by `GET /api/system-status`.
import type { Db } from './db.js';

export class FallbacksRepo {
  private readonly bumpStmt;
  private readonly allStmt;

  constructor(db: Db) {
    this.bumpStmt = db.prepare(
      `INSERT INTO fallback_counts (name, count, last_at) VALUES (?, 1, ?)
       ON CONFLICT (name) DO UPDATE SET count = count + 1, last_at = excluded.last_at`,
    );
    this.allStmt = db.prepare<[], { name: string; count: number }>('SELECT name, count FROM fallback_counts');
  }

  /** Adds one to `name`'s count. Call inside the caller's transaction. */
  increment(name: string, at: string): void {
    this.bumpStmt.run(name, at);
  }

  /** Every stored count by name. */
  all(): Map<string, number> {
    return new Map(this.allStmt.all().map((r) => [r.name, r.count]));
  }
}
