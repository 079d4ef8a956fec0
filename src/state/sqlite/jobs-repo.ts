// Generation jobs in the state database: one row per accepted generation request, written at spawn and exit.
import type { JobEnd } from '../../bus/event.js';
import type { Db } from './db.js';
import { jobQueryWhere, type JobQuery } from '../job-query.js';
import type { JobRecord } from '../records.js';

interface Row {
  proposal_id: string;
  project_id: string;
  pid: number | null;
  argv: string;
  state: string;
  started_at: string;
  ended_at: string | null;
  rc: number | null;
  signal: string | null;
  stdout_lines: number;
  stderr_lines: number;
  cancel_requested: number;
  exit_reason: string | null;
  exit_detail: string | null;
}

const fromRow = (r: Row): JobRecord => ({
  proposalId: r.proposal_id,
  projectId: r.project_id,
  pid: r.pid,
  argv: JSON.parse(r.argv) as string[],
  state: r.state,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  rc: r.rc,
  signal: r.signal,
  stdoutLines: r.stdout_lines,
  stderrLines: r.stderr_lines,
  cancelRequested: r.cancel_requested !== 0,
  exitReason: r.exit_reason,
  exitDetail: r.exit_detail,
});

export class JobsRepo {
  private readonly insertStmt;
  private readonly finishStmt;
  private readonly cancelStmt;
  private readonly getStmt;

  constructor(private readonly db: Db) {
    this.insertStmt = db.prepare(`INSERT INTO jobs (proposal_id, project_id, pid, argv, state, started_at) VALUES (?, ?, ?, ?, ?, ?)`);
    this.finishStmt = db.prepare(`UPDATE jobs SET state = ?, ended_at = ?, rc = ?, signal = ?, stdout_lines = ?, stderr_lines = ?, exit_reason = ?, exit_detail = ? WHERE proposal_id = ?`);
    this.cancelStmt = db.prepare(`UPDATE jobs SET cancel_requested = 1 WHERE proposal_id = ?`);
    this.getStmt = db.prepare(`SELECT * FROM jobs WHERE proposal_id = ?`);
  }

  insert(job: Pick<JobRecord, 'proposalId' | 'projectId' | 'pid' | 'argv' | 'state' | 'startedAt'>): void {
    this.insertStmt.run(job.proposalId, job.projectId, job.pid, JSON.stringify(job.argv), job.state, job.startedAt);
  }

  finish(proposalId: string, f: JobEnd): void {
    this.finishStmt.run(f.state, f.endedAt, f.rc, f.signal, f.stdoutLines, f.stderrLines, f.exitReason, f.exitDetail, proposalId);
  }

  /**
   * A job's output lines as its stored line events tell them (highest line number per stream), for a job
   * found `lost` after a crash had counted them only in memory; 0 for a stream without any.
   */
  lineCountsFromEvents(proposalId: string): { stdoutLines: number; stderrLines: number } {
    const rows = this.db
      .prepare(
        `SELECT substr(d, ?, 6) AS source, max(CAST(substr(d, ?) AS INTEGER)) AS n
         FROM (SELECT json_extract(data, '$.detail') AS d FROM events WHERE scope = 'engine/generation')
         WHERE substr(d, 1, ?) = ? GROUP BY source`,
      )
      .all(proposalId.length + 2, proposalId.length + 14, proposalId.length + 1, `${proposalId} `) as { source: string; n: number }[];
    const of = (source: string) => rows.find((r) => r.source === source)?.n ?? 0;
    return { stdoutLines: of('stdout'), stderrLines: of('stderr') };
  }

  /** Deletes finished jobs beyond the newest `keep` (running jobs are never deleted). */
  prune(keep: number): number {
    return this.db.prepare(`DELETE FROM jobs WHERE state != 'running' AND proposal_id NOT IN (SELECT proposal_id FROM jobs ORDER BY started_at DESC, rowid DESC LIMIT ?)`).run(keep).changes;
  }

  markCancelRequested(proposalId: string): void {
    this.cancelStmt.run(proposalId);
  }

  get(proposalId: string): JobRecord | undefined {
    const r = this.getStmt.get(proposalId) as Row | undefined;
    return r ? fromRow(r) : undefined;
  }

  /** Newest first. @param state only jobs in this state, when given. */
  list(limit: number, state?: string): JobRecord[] {
    const rows = (
      state === undefined
        ? this.db.prepare(`SELECT * FROM jobs ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(limit)
        : this.db.prepare(`SELECT * FROM jobs WHERE state = ? ORDER BY started_at DESC, rowid DESC LIMIT ?`).all(state, limit)
    ) as Row[];
    return rows.map(fromRow);
  }

  /** Jobs the database still records as running (after a crash of the service). */
  running(): JobRecord[] {
    return (this.db.prepare(`SELECT * FROM jobs WHERE state = 'running'`).all() as Row[]).map(fromRow);
  }

  /**
   * The jobs matching `q`, newest first (`GET /api/jobs` with filters and pages; job-query.ts).
   * Walks the `started_at` index from the page's start and stops at the limit.
   */
  search(q: JobQuery): JobRecord[] {
    const { sql, params } = jobSearchSql(q);
    return (this.db.prepare(sql).all(...params) as Row[]).map(fromRow);
  }

  /** Counts by state over the whole table, the jobs of `leaveOut` (proposal ids) not counted. */
  countsByState(leaveOut: readonly string[] = []): Record<string, number> {
    const rows = (
      leaveOut.length === 0
        ? this.db.prepare(`SELECT state, count(*) AS n FROM jobs GROUP BY state`).all()
        : this.db.prepare(`SELECT state, count(*) AS n FROM jobs WHERE proposal_id NOT IN (SELECT value FROM json_each(?)) GROUP BY state`).all(JSON.stringify(leaveOut))
    ) as { state: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }
}

/** The statement of {@link JobsRepo.search} and its parameters (tests read its query plan). */
export function jobSearchSql(q: JobQuery): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const where = jobQueryWhere(
    q,
    (v) => {
      params.push(v);
      return '?';
    },
    { unindexed: (c) => `+${c}`, byId: 'proposal_id' },
  );
  params.push(q.limit);
  return { sql: `SELECT * FROM jobs ${where} ORDER BY started_at DESC, proposal_id DESC LIMIT ?`, params };
}
