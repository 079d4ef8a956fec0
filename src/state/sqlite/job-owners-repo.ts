/**
 * Each job's instance in SQLite (cluster.md, Jobs), in a column beside what JobsRepo writes, so the fast
 * path is unchanged. NULL means recorded before the column existed, by the one instance (`localId`).
 */
import type { Db } from './db.js';

export class JobOwnersRepo {
  private readonly setStmt;
  private readonly ownersStmt;
  private readonly runningStmt;
  private readonly lostStmt;
  private readonly lostSinceStmt;

  constructor(
    db: Db,
    private readonly localId: string,
  ) {
    this.setStmt = db.prepare('UPDATE jobs SET instance_id = ? WHERE proposal_id = ?');
    this.ownersStmt = db.prepare<[string], { proposal_id: string; instance_id: string | null }>('SELECT proposal_id, instance_id FROM jobs WHERE proposal_id IN (SELECT value FROM json_each(?))');
    this.runningStmt = db.prepare<[string, string], { proposal_id: string }>(`SELECT proposal_id FROM jobs WHERE state = 'running' AND coalesce(instance_id, ?) = ?`);
    this.lostSinceStmt = db.prepare<[string, string, string], { proposal_id: string }>(
      `SELECT proposal_id FROM jobs WHERE state = 'lost' AND coalesce(instance_id, ?) = ? AND started_at >= ? ORDER BY started_at, rowid`,
    );
    // Conditional on `state = 'running'`: a job already marked is never marked again.
    this.lostStmt = db.prepare<[string, string, string], { proposal_id: string }>(
      `UPDATE jobs SET state = 'lost', exit_reason = 'lost', ended_at = ? WHERE state = 'running' AND coalesce(instance_id, ?) = ? RETURNING proposal_id`,
    );
  }

  /** Records the instance of a job (call in the transaction that inserts it). */
  set(proposalId: string, instanceId: string): void {
    this.setStmt.run(instanceId, proposalId);
  }

  /** The instance of each of `proposalIds` that exists. */
  ownersOf(proposalIds: readonly string[]): Map<string, string> {
    if (proposalIds.length === 0) return new Map();
    return new Map(this.ownersStmt.all(JSON.stringify(proposalIds)).map((r) => [r.proposal_id, r.instance_id ?? this.localId]));
  }

  /** Ids of the running jobs of an instance. */
  runningOf(instanceId: string): string[] {
    return this.runningStmt.all(this.localId, instanceId).map((r) => r.proposal_id);
  }

  /** Ids of an instance's lost jobs started at or after `since`. */
  lostSince(instanceId: string, since: string): string[] {
    return this.lostSinceStmt.all(this.localId, instanceId, since).map((r) => r.proposal_id);
  }

  /** Marks an instance's running jobs lost; returns their ids. */
  markLost(instanceId: string, endedAt: string): string[] {
    return this.lostStmt.all(endedAt, this.localId, instanceId).map((r) => r.proposal_id);
  }
}
