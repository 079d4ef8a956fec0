/**
 * Proposals in the state database (api-decisions.md, "Mutations and lifecycle routes"). A
 * proposal is pending from its creation until a decision is recorded for it; the first
 * decision moves it to `approved`, `rejected` or `deferred` for good.
 */
import type { Db } from './db.js';
import type { ProposalRecord } from '../records.js';

interface Row {
  id: string;
  kind: string | null;
  title: string | null;
  payload: string;
  status: string;
  created_at: string;
  decided_at: string | null;
}

const fromRow = (r: Row): ProposalRecord => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
  status: r.status,
  createdAt: r.created_at,
  decidedAt: r.decided_at,
});

export class ProposalsRepo {
  private readonly insertStmt;
  private readonly getStmt;
  private readonly markStmt;
  private readonly listAllStmt;
  private readonly listByStatusStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO proposals (id, kind, title, payload, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`);
    this.getStmt = db.prepare<[string], Row>('SELECT * FROM proposals WHERE id = ?');
    // The `status = 'pending'` condition is what makes was_pending atomic: of two decisions on
    // one pending id, exactly one changes the row.
    this.markStmt = db.prepare(`UPDATE proposals SET status = ?, decision = ?, decided_at = ? WHERE id = ? AND status = 'pending'`);
    this.listAllStmt = db.prepare<[number], Row>('SELECT * FROM proposals ORDER BY created_at DESC, rowid DESC LIMIT ?');
    this.listByStatusStmt = db.prepare<[string, number], Row>('SELECT * FROM proposals WHERE status = ? ORDER BY created_at DESC, rowid DESC LIMIT ?');
  }

  /** Records a new pending proposal. */
  insertPending(p: { id: string; kind: string | null; title: string | null; payload: object; createdAt: string }): void {
    this.insertStmt.run(p.id, p.kind, p.title, JSON.stringify(p.payload), p.createdAt);
  }

  /** The stored proposal, or undefined. */
  get(id: string): ProposalRecord | undefined {
    const row = this.getStmt.get(id);
    return row && fromRow(row);
  }

  /**
   * Marks a pending proposal as decided.
   * @returns true when it was pending (this call decided it), false when it was not pending
   *   or does not exist; the row is then left untouched.
   */
  markDecided(id: string, decision: string, decidedAt: string): boolean {
    return this.markStmt.run(decision, decision, decidedAt, id).changes === 1;
  }

  /** Stored proposals, newest first, optionally only those with `status`. */
  list(status: string | null, limit: number): ProposalRecord[] {
    const rows = status === null ? this.listAllStmt.all(limit) : this.listByStatusStmt.all(status, limit);
    return rows.map(fromRow);
  }

  /** Runs `fn` in one transaction (synchronous). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
