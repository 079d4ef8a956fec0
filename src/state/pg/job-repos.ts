/**
 * Jobs, instances and terminals on PostgreSQL (cluster.md, Jobs, Terminals). A dead instance's jobs are
 * marked lost with one conditional UPDATE over `running`: a second survivor waits on the rows, then finds
 * them not running, so each job is marked and its event emitted exactly once.
 */
import type { Exec } from './exec.js';
import { jobQueryWhere, type JobQuery } from '../job-query.js';
import { instanceFromRow, terminalFromRow } from '../records.js';
import type { InstanceStore, JobStore, StoredJob, TerminalStore } from '../state-store.js';

/** The channel a job's end is told on (migration 5): its state left `running`, on any instance. */
export const JOB_ENDED_CHANNEL = 'console_job_ended';

/** A job's end as told on {@link JOB_ENDED_CHANNEL}. */
export interface JobEnded {
  readonly instanceId: string;
  readonly projectId: string;
  readonly proposalId: string;
}

/** A notification's payload on {@link JOB_ENDED_CHANNEL}, or null when it is not one. */
export function parseJobEnded(payload: string): JobEnded | null {
  try {
    const v = JSON.parse(payload) as Partial<Record<keyof JobEnded, unknown>>;
    return typeof v.instanceId === 'string' && typeof v.projectId === 'string' && typeof v.proposalId === 'string'
      ? { instanceId: v.instanceId, projectId: v.projectId, proposalId: v.proposalId }
      : null;
  } catch {
    return null;
  }
}

interface JobRow {
  proposal_id: string;
  instance_id: string;
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
  cancel_requested: boolean;
  exit_reason: string | null;
  exit_detail: string | null;
}

const jobFromRow = (r: JobRow): StoredJob => ({
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
  cancelRequested: r.cancel_requested,
  exitReason: r.exit_reason,
  exitDetail: r.exit_detail,
  instanceId: r.instance_id,
});

const JOB_COLS = 'proposal_id, instance_id, project_id, pid, argv, state, started_at, ended_at, rc, signal, stdout_lines, stderr_lines, cancel_requested, exit_reason, exit_detail';

/** Generation jobs of every instance on PostgreSQL. */
export function pgJobs(x: Exec): JobStore {
  const select = async (where: string, params: readonly unknown[]) => (await x.q<JobRow>(`SELECT ${JOB_COLS} FROM jobs ${where}`, params)).rows.map(jobFromRow);
  return {
    insert: async (j) => {
      await x.q('INSERT INTO jobs (proposal_id, instance_id, project_id, pid, argv, state, started_at) VALUES ($1, $2, $3, $4, $5, $6, $7)', [
        j.proposalId,
        j.instanceId,
        j.projectId,
        j.pid,
        JSON.stringify(j.argv),
        j.state,
        j.startedAt,
      ]);
    },
    finish: async (id, f) => {
      await x.q('UPDATE jobs SET state = $1, ended_at = $2, rc = $3, signal = $4, stdout_lines = $5, stderr_lines = $6, exit_reason = $7, exit_detail = $8 WHERE proposal_id = $9', [
        f.state,
        f.endedAt,
        f.rc,
        f.signal,
        f.stdoutLines,
        f.stderrLines,
        f.exitReason,
        f.exitDetail,
        id,
      ]);
    },
    prune: async (keep) =>
      (
        await x.q(
          `DELETE FROM jobs WHERE state <> 'running' AND proposal_id NOT IN (
             SELECT proposal_id FROM jobs ORDER BY started_at DESC, seq DESC LIMIT $1)`,
          [keep],
        )
      ).rowCount ?? 0,
    markCancelRequested: async (id) => {
      await x.q('UPDATE jobs SET cancel_requested = true WHERE proposal_id = $1', [id]);
    },
    get: async (id) => (await select('WHERE proposal_id = $1', [id]))[0],
    search: (q) => pgSearchJobs(x, q),
    list: (limit, state) =>
      state === undefined ? select('ORDER BY started_at DESC, seq DESC LIMIT $1', [limit]) : select('WHERE state = $1 ORDER BY started_at DESC, seq DESC LIMIT $2', [state, limit]),
    running: (instanceId) => (instanceId === undefined ? select(`WHERE state = 'running'`, []) : select(`WHERE state = 'running' AND instance_id = $1`, [instanceId])),
    lostSince: (instanceId, since) => select(`WHERE state = 'lost' AND instance_id = $1 AND started_at >= $2`, [instanceId, since]),
    countsByState: async (leaveOut = []) =>
      Object.fromEntries(
        (await x.q<{ state: string; n: number }>('SELECT state, count(*) AS n FROM jobs WHERE proposal_id <> ALL($1::text[]) GROUP BY state', [leaveOut])).rows.map((r) => [r.state, r.n]),
      ),
    lineCounts: async (proposalId) => {
      // Details read `<proposal id> stdout|stderr <n>: …`; proposal ids are `gen_<hex>`, safe in a pattern.
      const rows = (
        await x.q<{ source: string; n: number }>(
          `SELECT m[1] AS source, max(m[2]::bigint) AS n
           FROM (SELECT regexp_match((data::json)->>'detail', '^' || $1 || ' (stdout|stderr) ([0-9]+)') AS m FROM events WHERE proposal_id = $1 AND scope = 'engine/generation') t
           WHERE m IS NOT NULL GROUP BY m[1]`,
          [proposalId],
        )
      ).rows;
      const of = (source: string) => Number(rows.find((r) => r.source === source)?.n ?? 0);
      return { stdoutLines: of('stdout'), stderrLines: of('stderr') };
    },
    markLost: async (instanceId, endedAt) =>
      (await x.q<JobRow>(`UPDATE jobs SET state = 'lost', exit_reason = 'lost', ended_at = $1 WHERE instance_id = $2 AND state = 'running' RETURNING ${JOB_COLS}`, [endedAt, instanceId])).rows.map(
        jobFromRow,
      ),
  };
}

/**
 * The jobs matching `q`, newest first (`JobStore.search`; job-query.ts): the `started_at`
 * index walked from the page's start; ids compared byte-wise (`COLLATE "C"`), as SQLite does.
 */
export async function pgSearchJobs(x: Exec, q: JobQuery): Promise<StoredJob[]> {
  const params: unknown[] = [];
  const where = jobQueryWhere(
    q,
    (v) => {
      params.push(v);
      return `$${params.length}`;
    },
    { unindexed: (c) => c, byId: 'proposal_id COLLATE "C"' },
  );
  params.push(q.limit);
  const sql = `SELECT ${JOB_COLS} FROM jobs ${where} ORDER BY started_at DESC, proposal_id COLLATE "C" DESC LIMIT $${params.length}`;
  return (await x.q<JobRow>(sql, params)).rows.map(jobFromRow);
}

/** Instances and heartbeats on PostgreSQL. */
export function pgInstances(x: Exec): InstanceStore {
  return {
    register: async (i) =>
      (
        (
          await x.q<{ epoch: number }>(
            `INSERT INTO instances (id, address, version, started_at, heartbeat_at, stream_clients) VALUES ($1, $2, $3, $4, $5, 0)
             ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,
               started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stream_clients = 0, epoch = instances.epoch + 1
             RETURNING epoch`,
            [i.id, i.address, i.version, i.startedAt, i.heartbeatAt ?? i.startedAt],
          )
        ).rows[0] as { epoch: number }
      ).epoch,
    heartbeat: async (id, at, streamClients, epoch) =>
      (epoch === undefined
        ? await x.q('UPDATE instances SET heartbeat_at = $1, stream_clients = $2 WHERE id = $3', [at, streamClients, id])
        : await x.q('UPDATE instances SET heartbeat_at = $1, stream_clients = $2 WHERE id = $3 AND epoch = $4', [at, streamClients, id, epoch])
      ).rowCount === 1,
    judge: async (id, heartbeatAt) => (await x.q('UPDATE instances SET epoch = epoch + 1 WHERE id = $1 AND heartbeat_at = $2', [id, heartbeatAt])).rowCount === 1,
    get: async (id) => {
      const r = (await x.q('SELECT * FROM instances WHERE id = $1', [id])).rows[0];
      return r && instanceFromRow(r as Parameters<typeof instanceFromRow>[0]);
    },
    list: async () => (await x.q('SELECT * FROM instances ORDER BY id')).rows.map((r) => instanceFromRow(r as Parameters<typeof instanceFromRow>[0])),
    prune: async (before) => (await x.q('DELETE FROM instances WHERE heartbeat_at < $1', [before])).rowCount ?? 0,
  };
}

/** Terminal records on PostgreSQL. */
export function pgTerminals(x: Exec): TerminalStore {
  type Row = Parameters<typeof terminalFromRow>[0];
  return {
    put: async (t) => {
      await x.q(
        `INSERT INTO terminals (project_id, instance_id, pid, port, url, state, started_at, ended_at, rc, signal, credential)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (project_id) DO UPDATE SET instance_id = excluded.instance_id, pid = excluded.pid,
           port = excluded.port, url = excluded.url, state = excluded.state, started_at = excluded.started_at,
           ended_at = excluded.ended_at, rc = excluded.rc, signal = excluded.signal, credential = excluded.credential`,
        [t.projectId, t.instanceId, t.pid, t.port, t.url, t.state, t.startedAt, t.endedAt, t.rc, t.signal, t.credential ?? null],
      );
    },
    get: async (projectId) => {
      const r = (await x.q<Row>('SELECT * FROM terminals WHERE project_id = $1', [projectId])).rows[0];
      return r && terminalFromRow(r);
    },
    list: async () => (await x.q<Row>('SELECT * FROM terminals ORDER BY project_id')).rows.map(terminalFromRow),
    end: async (projectId, f) =>
      (await x.q(`UPDATE terminals SET state = $1, ended_at = $2, rc = $3, signal = $4 WHERE project_id = $5 AND state = 'running'`, [f.state, f.endedAt, f.rc, f.signal, projectId])).rowCount === 1,
    endAllOf: async (instanceId, state, endedAt) =>
      (await x.q<Row>(`UPDATE terminals SET state = $1, ended_at = $2 WHERE instance_id = $3 AND state = 'running' RETURNING *`, [state, endedAt, instanceId])).rows.map(terminalFromRow),
  };
}
