// Terminal records in the SQLite state database (cluster.md, Terminals): one per project, with its instance.
import type { Db } from './db.js';
import { terminalFromRow, type TerminalRecord, type TerminalRow } from '../records.js';

export class TerminalsRepo {
  private readonly putStmt;
  private readonly getStmt;
  private readonly listStmt;
  private readonly endStmt;
  private readonly endAllStmt;

  constructor(db: Db) {
    this.putStmt = db.prepare(
      `INSERT INTO terminals (project_id, instance_id, pid, port, url, state, started_at, ended_at, rc, signal, credential)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (project_id) DO UPDATE SET instance_id = excluded.instance_id, pid = excluded.pid,
         port = excluded.port, url = excluded.url, state = excluded.state, started_at = excluded.started_at,
         ended_at = excluded.ended_at, rc = excluded.rc, signal = excluded.signal, credential = excluded.credential`,
    );
    this.getStmt = db.prepare<[string], TerminalRow>('SELECT * FROM terminals WHERE project_id = ?');
    this.listStmt = db.prepare<[], TerminalRow>('SELECT * FROM terminals ORDER BY project_id');
    this.endStmt = db.prepare(`UPDATE terminals SET state = ?, ended_at = ?, rc = ?, signal = ? WHERE project_id = ? AND state = 'running'`);
    this.endAllStmt = db.prepare<[string, string, string], TerminalRow>(`UPDATE terminals SET state = ?, ended_at = ? WHERE instance_id = ? AND state = 'running' RETURNING *`);
  }

  put(t: TerminalRecord): void {
    this.putStmt.run(t.projectId, t.instanceId, t.pid, t.port, t.url, t.state, t.startedAt, t.endedAt, t.rc, t.signal, t.credential ?? null);
  }

  get(projectId: string): TerminalRecord | undefined {
    const r = this.getStmt.get(projectId);
    return r && terminalFromRow(r);
  }

  list(): TerminalRecord[] {
    return this.listStmt.all().map(terminalFromRow);
  }

  /** Ends the project's running terminal; false when none runs. */
  end(projectId: string, f: { state: string; endedAt: string; rc: number | null; signal: string | null }): boolean {
    return this.endStmt.run(f.state, f.endedAt, f.rc, f.signal, projectId).changes === 1;
  }

  /** Ends every running terminal of an instance; returns those it ended. */
  endAllOf(instanceId: string, state: string, endedAt: string): TerminalRecord[] {
    return this.endAllStmt.all(state, endedAt, instanceId).map(terminalFromRow);
  }
}
