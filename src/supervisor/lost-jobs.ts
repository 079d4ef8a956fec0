/**
 * Start-up recovery of jobs a dead run left `running` here: their trees swept, each marked `lost`
 * with its event in one transaction guarded on `running`, so exactly one instance marks it.
 */
import type { Bus } from '../bus/bus.js';
import type { EventInput, JobEnd } from '../bus/event.js';
import type { JobRecord } from '../state/records.js';
import type { JobStore } from '../state/state-store.js';
import { sweepTree, type HousekeepingThread, type SweepBounds } from '../process/index.js';
import { transition } from './job-state.js';
import { GENERATION_SCOPE, jobMark } from './running-job.js';

/**
 * Kills what is left of every job recorded running on `instanceId`, marks each `lost`; with `lostSince` (cluster mode, ISO-8601) also kills
 * jobs others marked lost since (cluster.md §Jobs). @returns the lost records. @throws the state database's error (start-up stops).
 */
export async function recoverLostJobs(jobs: JobStore, instanceId: string, bus: Bus, procs: HousekeepingThread, sweep: SweepBounds, lostSince: string | null = null): Promise<JobRecord[]> {
  const lost: JobRecord[] = [];
  const boot = await procs.bootTimeMs();
  for (const { instanceId: _owner, ...rec } of await jobs.running(instanceId)) {
    const killed = await killLostJob(procs, sweep, rec, boot);
    const endedAt = new Date().toISOString();
    const { next } = transition({ state: 'running' }, { kind: 'lost' });
    // Its lines were counted in the memory of the run that died: its stored events tell them.
    const counted = await jobs.lineCounts(rec.proposalId);
    const end = {
      state: next.state,
      endedAt,
      rc: null,
      signal: null,
      stdoutLines: Math.max(rec.stdoutLines, counted.stdoutLines),
      stderrLines: Math.max(rec.stderrLines, counted.stderrLines),
      exitReason: 'lost',
      exitDetail: null,
    } as const;
    const marked = await publishLost(bus, rec, end, `the service stopped while job ${rec.proposalId} ran${killed > 0 ? `; ${killed} of its processes were killed` : ''}`);
    if (marked) lost.push({ ...rec, ...end });
  }
  // Cluster mode: jobs another instance marked lost while this one was away may still run here.
  if (lostSince !== null) {
    for (const { instanceId: _owner, ...rec } of await jobs.lostSince(instanceId, lostSince)) await killLostJob(procs, sweep, rec, boot);
  }
  return lost;
}

/** Publishes a job's lost event with its final state, only over `running`. @returns once stored, whether this call marked it. */
export function publishLost(bus: Bus, rec: Pick<JobRecord, 'proposalId' | 'pid'>, end: JobEnd, detail: string): Promise<boolean> {
  return new Promise((settled) => bus.publish({ ...lostJobEvent(rec, detail), guard: { job: rec.proposalId, end, settled } }));
}

/** The `dispatch_cli lost pid=N` failure event of a job marked lost (README, "Generation jobs"). */
export function lostJobEvent(rec: Pick<JobRecord, 'proposalId' | 'pid'>, detail: string): EventInput {
  const { severity } = transition({ state: 'running' }, { kind: 'lost' });
  return {
    severity,
    scope: GENERATION_SCOPE,
    summary: `dispatch_cli lost pid=${rec.pid ?? 'unknown'}`,
    detail,
    payload: { proposal_id: rec.proposalId, pid: rec.pid },
  };
}

/** SIGKILLs what is left of a previous run's job (nothing survives a reboot): its marked processes, and its group and tree if still its own. */
async function killLostJob(procs: HousekeepingThread, sweep: SweepBounds, rec: JobRecord, boot: number | null): Promise<number> {
  if (boot !== null && Date.parse(rec.startedAt) < boot) return 0;
  const leader = rec.pid !== null && (await groupOfJob(procs, rec.pid, rec.argv)) ? rec.pid : null;
  const swept = await sweepTree(procs, { root: leader, pgid: leader, mark: jobMark(rec.proposalId), known: [] }, sweep);
  return swept.killed;
}

/**
 * Whether group `pid` of an old job is still the job's despite pid reuse: a live leader must run
 * our tool; a leaderless live group can hold only the job's processes (Linux never reuses a group's id).
 */
async function groupOfJob(procs: HousekeepingThread, pid: number, argv: readonly string[]): Promise<boolean> {
  if (!groupAlive(pid)) return false;
  const { info, cmdline } = await procs.describe(pid);
  if (info === null || info.state === 'Z') return true;
  return info.pgid === pid && argv.length > 1 && cmdline?.includes(argv[1] as string) === true;
}

/** True while a group led by `pgid` exists that we may signal (a signal 0 to it succeeds). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false; // ESRCH: none; EPERM: another user's, never one of our jobs
  }
}
