// Every decision on a proposal, fallback ones included; the proposals table keeps only the first as its status.
import type { Db } from './db.js';
import type { DecisionRecord } from '../records.js';

interface Row {
  id: number;
  proposal_id: string;
  decision: string;
  kind: string | null;
  label: string;
  was_pending: number;
  deferred_execution: number;
  severity: string;
  scope: string;
  extra: string;
  decided_at: string;
}

const fromRow = (r: Row): DecisionRecord => ({
  id: r.id,
  proposalId: r.proposal_id,
  decision: r.decision,
  kind: r.kind,
  label: r.label,
  wasPending: r.was_pending !== 0,
  deferredExecution: r.deferred_execution !== 0,
  severity: r.severity,
  scope: r.scope,
  extra: JSON.parse(r.extra) as Record<string, unknown>,
  decidedAt: r.decided_at,
});

export class DecisionsRepo {
  private readonly insertStmt;
  private readonly listStmt;

  constructor(db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO decisions (proposal_id, decision, kind, label, was_pending, deferred_execution, severity, scope, extra, decided_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    );
    this.listStmt = db.prepare<[string], Row>('SELECT * FROM decisions WHERE proposal_id = ? ORDER BY id');
  }

  /** Appends one decision; returns its id. Call inside the caller's transaction. */
  insert(d: Omit<DecisionRecord, 'id'>): number {
    const r = this.insertStmt.run(d.proposalId, d.decision, d.kind, d.label, d.wasPending ? 1 : 0, d.deferredExecution ? 1 : 0, d.severity, d.scope, JSON.stringify(d.extra), d.decidedAt);
    return Number(r.lastInsertRowid);
  }

  /** Decisions recorded for one proposal id, oldest first. */
  listFor(proposalId: string): DecisionRecord[] {
    return this.listStmt.all(proposalId).map(fromRow);
  }
}
