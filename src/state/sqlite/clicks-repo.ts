// Clicks (api-decisions.md, "Service routes with partial shape"): a ring per project and a bound on all (rings
// alone bound nothing with many projects), enforced with the insert in one transaction.
import type { Db } from './db.js';
import type { ClickRecord } from '../records.js';

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
  private readonly trimStmt;
  private readonly listProjectStmt;
  private readonly listAllStmt;
  private readonly appendTx;
  /** Rows in the table, counted once and kept in step by each append: a `count(*)` per insert would scan up to a million rows. */
  private total: number;

  /** @param maxTotal clicks kept in all; a larger table (a lowered bound) is trimmed here. @throws RangeError for a bound not a positive integer. */
  constructor(
    db: Db,
    readonly ringSize: number,
    readonly maxTotal: number,
  ) {
    for (const [name, v] of [
      ['ringSize', ringSize],
      ['maxTotal', maxTotal],
    ] as const) {
      if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
    }
    this.insertStmt = db.prepare<[string, string, number | null, number | null, string | null, string], Row>(
      'INSERT INTO clicks (project_id, target, x, y, meta, clicked_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING *',
    );
    // Everything at or below the (ringSize + 1)-th newest id of the project goes.
    this.evictStmt = db.prepare(
      `DELETE FROM clicks WHERE project_id = ? AND id <= (
         SELECT id FROM clicks WHERE project_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    // The n oldest of all (ids only grow: AUTOINCREMENT), found on the primary key.
    this.trimStmt = db.prepare<[number]>('DELETE FROM clicks WHERE id IN (SELECT id FROM clicks ORDER BY id LIMIT ?)');
    this.listProjectStmt = db.prepare<[string, number], Row>('SELECT * FROM clicks WHERE project_id = ? ORDER BY id DESC LIMIT ?');
    this.listAllStmt = db.prepare<[number], Row>('SELECT * FROM clicks ORDER BY id DESC LIMIT ?');
    this.appendTx = db.transaction((c: Omit<ClickRecord, 'id'>): { record: ClickRecord; total: number } => {
      const row = this.insertStmt.get(c.projectId, c.target, c.x, c.y, c.meta === null ? null : JSON.stringify(c.meta), c.clickedAt) as Row;
      let total = this.total + 1 - this.evictStmt.run(c.projectId, c.projectId, this.ringSize).changes;
      if (total > this.maxTotal) total -= this.trimStmt.run(total - this.maxTotal).changes;
      return { record: fromRow(row), total };
    });
    this.total = (db.prepare('SELECT count(*) AS n FROM clicks').get() as { n: number }).n;
    if (this.total > this.maxTotal) {
      this.total -= db.transaction(() => this.trimStmt.run(this.total - this.maxTotal).changes)();
    }
  }

  /** Clicks stored now, of all projects. */
  get size(): number {
    return this.total;
  }

  /** Appends a click, evicting past the ring and the total in the same transaction; never inside another
   * transaction, as the running count follows this one's commit. */
  append(c: Omit<ClickRecord, 'id'>): ClickRecord {
    const { record, total } = this.appendTx(c);
    // Only once committed: a transaction that failed changed nothing.
    this.total = total;
    return record;
  }

  /** The newest `limit` clicks, of one project or (null) of all, newest first. */
  list(projectId: string | null, limit: number): ClickRecord[] {
    const rows = projectId === null ? this.listAllStmt.all(limit) : this.listProjectStmt.all(projectId, limit);
    return rows.map(fromRow);
  }
}
