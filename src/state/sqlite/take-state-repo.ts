// Take actions and the states they leave (api-decisions.md, "Mutations and lifecycle routes"): actions are
// logged; `take_states` holds each take's current state, a partial unique index keeping one primary per shot.
import type { Db } from './db.js';
import type { TakeStateRecord, TakeActionRecord } from '../records.js';

interface StateRow {
  project_id: string;
  take_id: string;
  shot_id: string | null;
  is_primary: number;
  circled: number;
  rejected: number;
  version: number;
}

const fromRow = (r: StateRow): TakeStateRecord => ({
  projectId: r.project_id,
  takeId: r.take_id,
  shotId: r.shot_id,
  primary: r.is_primary !== 0,
  circled: r.circled !== 0,
  rejected: r.rejected !== 0,
  version: r.version,
});

export class TakeStateRepo {
  private readonly allStmt;
  private readonly clearPrimaryStmt;
  private readonly upsertStmt;
  private readonly logStmt;
  private readonly getStmt;
  private readonly ensureStmt;

  constructor(db: Db) {
    this.allStmt = db.prepare<[], StateRow>('SELECT * FROM take_states');
    this.getStmt = db.prepare<[string, string], StateRow>('SELECT * FROM take_states WHERE project_id = ? AND take_id = ?');
    this.ensureStmt = db.prepare(
      `INSERT INTO take_states (project_id, take_id, shot_id, is_primary, circled, rejected, updated_at) VALUES (?, ?, ?, 0, 0, 0, ?)
       ON CONFLICT (project_id, take_id) DO NOTHING`,
    );
    this.clearPrimaryStmt = db.prepare<[string, string, string, string], StateRow>(
      `UPDATE take_states SET is_primary = 0, updated_at = ?, version = version + 1
       WHERE project_id = ? AND shot_id = ? AND take_id != ? AND is_primary = 1 RETURNING *`,
    );
    // A take keeps its first shot unless marked primary: then its file's shot wins (the caller cleared that
    // shot's other primaries first, so the unique index holds).
    this.upsertStmt = db.prepare(
      `INSERT INTO take_states (project_id, take_id, shot_id, is_primary, circled, rejected, updated_at)
       VALUES (@projectId, @takeId, @shotId, @primary, @circled, @rejected, @at)
       ON CONFLICT (project_id, take_id) DO UPDATE SET
         shot_id = CASE WHEN @primary = 1 THEN coalesce(excluded.shot_id, shot_id) ELSE coalesce(shot_id, excluded.shot_id) END,
         is_primary = excluded.is_primary, circled = excluded.circled, rejected = excluded.rejected,
         updated_at = excluded.updated_at, version = version + 1
       RETURNING *`,
    );
    this.logStmt = db.prepare(
      `INSERT INTO take_actions (project_id, take_id, action, severity, on_disk, scope, extra, acted_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Every stored take state (loaded once at start-up). */
  all(): TakeStateRecord[] {
    return this.allStmt.all().map(fromRow);
  }

  /** The take's committed state, created all false when absent. In the caller's transaction, the only writer
   * on SQLite, so the row stays as read. */
  lock(projectId: string, takeId: string, shotId: string | null, at: string): TakeStateRecord {
    this.ensureStmt.run(projectId, takeId, shotId, at);
    return fromRow(this.getStmt.get(projectId, takeId) as StateRow);
  }

  /** Clears `primary` on the shot's other takes, in the caller's transaction; @returns the rows that lost it. */
  clearOtherPrimaries(projectId: string, shotId: string, keepTakeId: string, at: string): TakeStateRecord[] {
    return this.clearPrimaryStmt.all(at, projectId, shotId, keepTakeId).map(fromRow);
  }

  /** Writes a take's state. Call inside the caller's transaction. @returns the row as it is now. */
  upsert(s: TakeStateRecord, at: string): TakeStateRecord {
    return fromRow(
      this.upsertStmt.get({
        projectId: s.projectId,
        takeId: s.takeId,
        shotId: s.shotId,
        primary: s.primary ? 1 : 0,
        circled: s.circled ? 1 : 0,
        rejected: s.rejected ? 1 : 0,
        at,
      }) as StateRow,
    );
  }

  /** Appends an action to the log. Call inside the caller's transaction. */
  logAction(a: TakeActionRecord): void {
    this.logStmt.run(a.projectId, a.takeId, a.action, a.severity, a.onDisk ? 1 : 0, a.scope, JSON.stringify(a.extra), a.actedAt);
  }
}
