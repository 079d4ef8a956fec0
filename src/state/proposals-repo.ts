/**
 * Proposals in the state database (api-decisions.md, "Mutations and lifecycle routes"). A
 * proposal is pending from its creation until a decision is recorded for it.
 */
import type { Db } from './db.js';

export interface ProposalRecord {
  readonly id: string;
  readonly kind: string | null;
  readonly title: string | null;
  readonly payload: Readonly<Record<string, unknown>>;
  /** `pending`, or the decision recorded for it. */
  readonly status: string;
  readonly createdAt: string;
  readonly decidedAt: string | null;
}

export class ProposalsRepo {
  private readonly insertStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(
      `INSERT INTO proposals (id, kind, title, payload, status, created_at) VALUES (?, ?, ?, ?, 'pending', ?)`,
    );
  }

  /** Records a new pending proposal. */
  insertPending(p: { id: string; kind: string | null; title: string | null; payload: object; createdAt: string }): void {
    this.insertStmt.run(p.id, p.kind, p.title, JSON.stringify(p.payload), p.createdAt);
  }

  /** Runs `fn` in one transaction (synchronous). */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)();
  }
}
