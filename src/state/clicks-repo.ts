/**
 * Click records (api-decisions.md, "Service routes with partial shape", Clicks): a ring
 * buffer per project kept in the state database. The insert and the eviction of the oldest
 * clicks past the bound happen in one transaction, so the buffer never holds more than its
 * size and an acknowledged click is never lost to a crash.
 */
import type { Db } from './db.js';

/** A stored click. `meta` is the caller's object, null when none; `clickedAt` ISO-8601 UTC. */
export interface ClickRecord {
  readonly id: number;
  readonly projectId: string;
  readonly target: string;
  readonly x: number | null;
  readonly y: number | null;
  readonly meta: Readonly<Record<string, unknown>> | null;
  readonly clickedAt: string;
}

interface Row {
  id: number;
  project_id: string;
  target: string;
  x: number | null;
  y: number | null;
  meta: string | null;
  clicked_at: string;
}

const fromRow = (r: Row): ClickRecord => ({
  id: r.id,
  projectId: r.project_id,
  target: r.target,
  x: r.x,
  y: r.y,
  meta: r.meta === null ? null : (JSON.parse(r.meta) as Record<string, unknown>),
  clickedAt: r.clicked_at,
});

export class ClicksRepo {
  private readonly insertStmt;
  private readonly evictStmt;
  private readonly listProjectStmt;
  private readonly listAllStmt;
  private readonly appendTx;

  /** @param ringSize clicks kept per project (≥ 1). */
  constructor(
    db: Db,
    readonly ringSize: number,
  ) {
    if (!Number.isInteger(ringSize) || ringSize < 1) throw new RangeError(`ringSize must be a positive integer, got ${ringSize}`);
    this.insertStmt = db.prepare<[string, string, number | null, number | null, string | null, string], Row>(
      'INSERT INTO clicks (project_id, target, x, y, meta, clicked_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
    );
    // Everything at or below the (ringSize + 1)-th newest id of the project goes.
    this.evictStmt = db.prepare(
      `DELETE FROM clicks WHERE project_id = ? AND id <= (
         SELECT id FROM clicks WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    this.listProjectStmt = db.prepare<[string, number], Row>(
      'SELECT * FROM clicks WHERE project_id = ? ORDER BY id DESC LIMIT ?',
    );
    this.listAllStmt = db.prepare<[number], Row>('SELECT * FROM clicks ORDER BY id DESC LIMIT ?');
    this.appendTx = db.transaction((c: Omit<ClickRecord, 'id'>): ClickRecord => {
      const row = this.insertStmt.get(c.projectId, c.target, c.x, c.y, c.meta === null ? null : JSON.stringify(c.meta), c.clickedAt) as Row;
      this.evictStmt.run(c.projectId, c.projectId, this.ringSize);
      return fromRow(row);
    });
  }

  /** Appends a click and evicts the project's oldest past the ring size, in one transaction. */
  append(c: Omit<ClickRecord, 'id'>): ClickRecord {
    return this.appendTx(c);
  }

  /** The newest `limit` clicks, of one project or (null) of all, newest first. */
  list(projectId: string | null, limit: number): ClickRecord[] {
    const rows = projectId === null ? this.listAllStmt.all(limit) : this.listProjectStmt.all(projectId, limit);
    return rows.map(fromRow);
  }
}
