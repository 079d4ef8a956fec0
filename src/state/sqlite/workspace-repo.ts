/**
 * Workspace state (api-decisions.md, "Service routes with partial shape"): one opaque JSON
 * blob per workspace id with a revision number for optimistic concurrency, and the corrupt
 * blobs the console reports, kept for inspection (newest few per workspace).
 */
import type { Db } from './db.js';
import type { WorkspaceRecord, WorkspaceReport, PutOutcome } from '../records.js';

interface StateRow {
  wid: string;
  revision: number;
  state: string;
  updated_at: string;
}
interface ReportRow {
  id: number;
  wid: string;
  reason: string | null;
  blob: string;
  bytes: number;
  received_at: string;
}

const fromRow = (r: StateRow): WorkspaceRecord => ({
  wid: r.wid,
  revision: r.revision,
  state: JSON.parse(r.state) as unknown,
  updatedAt: r.updated_at,
});

export class WorkspaceRepo {
  private readonly getStmt;
  private readonly insertStmt;
  private readonly updateStmt;
  private readonly reportStmt;
  private readonly pruneStmt;
  private readonly reportsStmt;
  private readonly putTx;
  private readonly reportTx;

  /** @param reportsKept newest reports kept per workspace id. */
  constructor(
    db: Db,
    readonly reportsKept: number,
  ) {
    this.getStmt = db.prepare<[string], StateRow>('SELECT * FROM workspace_states WHERE wid = ?');
    this.insertStmt = db.prepare('INSERT INTO workspace_states (wid, revision, state, updated_at) VALUES (?, 1, ?, ?)');
    this.updateStmt = db.prepare('UPDATE workspace_states SET revision = revision + 1, state = ?, updated_at = ? WHERE wid = ? AND revision = ?');
    this.reportStmt = db.prepare<[string, string | null, string, number, string], { id: number }>(
      'INSERT INTO workspace_reports (wid, reason, blob, bytes, received_at) VALUES (?, ?, ?, ?, ?) RETURNING id',
    );
    this.pruneStmt = db.prepare(
      `DELETE FROM workspace_reports WHERE wid = ? AND id <= (
         SELECT id FROM workspace_reports WHERE wid = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
    );
    this.reportsStmt = db.prepare<[string, number], ReportRow>('SELECT * FROM workspace_reports WHERE wid = ? ORDER BY id DESC LIMIT ?');
    this.putTx = db.transaction((wid: string, expected: number, json: string, at: string): PutOutcome => {
      const current = this.getStmt.get(wid)?.revision ?? 0;
      if (current !== expected) return { ok: false, currentRevision: current };
      if (current === 0) this.insertStmt.run(wid, json, at);
      else this.updateStmt.run(json, at, wid, expected);
      return { ok: true, record: fromRow(this.getStmt.get(wid) as StateRow) };
    });
    this.reportTx = db.transaction((wid: string, reason: string | null, json: string, at: string): number => {
      const { id } = this.reportStmt.get(wid, reason, json, Buffer.byteLength(json), at) as { id: number };
      this.pruneStmt.run(wid, wid, this.reportsKept);
      return id;
    });
  }

  /** The stored blob, or undefined when the workspace id was never written. */
  get(wid: string): WorkspaceRecord | undefined {
    const row = this.getStmt.get(wid);
    return row && fromRow(row);
  }

  /**
   * Writes `state` when `expectedRevision` equals the current revision (0 for a workspace never
   * written); the revision then goes up by one. Read and write happen in one transaction.
   */
  put(wid: string, expectedRevision: number, state: unknown, at: string): PutOutcome {
    return this.putTx(wid, expectedRevision, JSON.stringify(state), at);
  }

  /** Stores a corrupt blob (its JSON text) and prunes old reports; returns the report id. */
  addReport(wid: string, blobJson: string, reason: string | null, at: string): number {
    return this.reportTx(wid, reason, blobJson, at);
  }

  /** The newest reports of a workspace, newest first. */
  reports(wid: string, limit: number): WorkspaceReport[] {
    return this.reportsStmt.all(wid, limit).map((r) => ({
      id: r.id,
      wid: r.wid,
      reason: r.reason,
      blob: JSON.parse(r.blob) as unknown,
      bytes: r.bytes,
      receivedAt: r.received_at,
    }));
  }
}
