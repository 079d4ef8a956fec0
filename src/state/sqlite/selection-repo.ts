/**
 * Per-project selection and the recent projects and items (api-decisions.md, "Service routes
 * with partial shape": Selection, Recent). Recent entries are keyed by (project, kind, id):
 * opening one again moves it to the front; `seq` orders them, newest first, and each list is
 * pruned to a bound.
 */
import type { Db } from './db.js';
import type { SelectionRecord, RecentRecord } from '../records.js';

interface RecentRow {
  project_id: string;
  kind: string;
  item_id: string;
  opened_at: string;
}

const recentFromRow = (r: RecentRow): RecentRecord => ({ projectId: r.project_id, kind: r.kind, itemId: r.item_id, openedAt: r.opened_at });

export class SelectionRepo {
  private readonly getStmt;
  private readonly putStmt;
  private readonly touchStmt;
  private readonly pruneProjectsStmt;
  private readonly pruneItemsStmt;
  private readonly projectsStmt;
  private readonly itemsStmt;

  constructor(db: Db) {
    this.getStmt = db.prepare<[string], { project_id: string; selection: string; updated_at: string }>('SELECT * FROM selections WHERE project_id = ?');
    this.putStmt = db.prepare(
      `INSERT INTO selections (project_id, selection, updated_at) VALUES (?, ?, ?)
       ON CONFLICT (project_id) DO UPDATE SET selection = excluded.selection, updated_at = excluded.updated_at`,
    );
    this.touchStmt = db.prepare(
      `INSERT INTO recent_items (project_id, kind, item_id, seq, opened_at)
       VALUES (?, ?, ?, (SELECT coalesce(max(seq), 0) + 1 FROM recent_items), ?)
       ON CONFLICT (project_id, kind, item_id) DO UPDATE SET seq = excluded.seq, opened_at = excluded.opened_at`,
    );
    const prune = (where: string) =>
      db.prepare(
        `DELETE FROM recent_items WHERE ${where} AND seq <= (
           SELECT seq FROM recent_items WHERE ${where} ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      );
    this.pruneProjectsStmt = prune(`kind = 'project'`);
    this.pruneItemsStmt = prune(`kind != 'project'`);
    this.projectsStmt = db.prepare<[number], RecentRow>(`SELECT * FROM recent_items WHERE kind = 'project' ORDER BY seq DESC LIMIT ?`);
    this.itemsStmt = db.prepare<[number], RecentRow>(`SELECT * FROM recent_items WHERE kind != 'project' ORDER BY seq DESC LIMIT ?`);
  }

  /** The stored selection of a project, or undefined. */
  get(projectId: string): SelectionRecord | undefined {
    const r = this.getStmt.get(projectId);
    return r && { projectId: r.project_id, selection: JSON.parse(r.selection) as Record<string, unknown>, updatedAt: r.updated_at };
  }

  /** Replaces a project's selection. Call inside the caller's transaction. */
  put(s: SelectionRecord): void {
    this.putStmt.run(s.projectId, JSON.stringify(s.selection), s.updatedAt);
  }

  /**
   * Records an entry as opened now (moves it to the front), then prunes its list to `keep`.
   * Call inside the caller's transaction.
   */
  touch(r: RecentRecord, keep: number): void {
    this.touchStmt.run(r.projectId, r.kind, r.itemId, r.openedAt);
    (r.kind === 'project' ? this.pruneProjectsStmt : this.pruneItemsStmt).run(keep);
  }

  /** Recent projects and recent items, each newest first. */
  recent(limit: number): { projects: RecentRecord[]; items: RecentRecord[] } {
    return {
      projects: this.projectsStmt.all(limit).map(recentFromRow),
      items: this.itemsStmt.all(limit).map(recentFromRow),
    };
  }
}
