/**
 * A job history of a known shape written straight to a test service's SQLite state database,
 * as its supervisor writes jobs (JobsRepo): 10,000 finished jobs, one a minute from 2026-01-01,
 * every fifth at the same start time as the one before (ties broken by id), in four states and
 * four projects of the sample store.
 */
import type { JobEnd } from '../../src/bus/event.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';
import type { TestService } from './service.js';

export const SEEDED_STATES = ['exited ok', 'exited ok', 'exited failed', 'lost'] as const;
export const SEEDED_PROJECTS = ['harbor-lights', 'old-pilot', 'night-market', 'dry-dock'] as const;

/** A seeded job as the list serves it. */
export interface SeededJob {
  readonly proposalId: string;
  readonly state: string;
  readonly projectId: string;
  readonly startedAt: string;
}

/** Job `i`'s start: `i` minutes into 2026, every fifth at the same time as the one before. */
export const seededStart = (i: number) => new Date(Date.UTC(2026, 0, 1) + (i - (i % 5 === 4 ? 1 : 0)) * 60_000).toISOString();
export const seededId = (i: number) => `gen_${i.toString(16).padStart(12, '0')}`;

/** The seeded jobs, in the order of `i`. */
export function seededJobs(n: number): SeededJob[] {
  return Array.from({ length: n }, (_, i) => ({ proposalId: seededId(i), state: SEEDED_STATES[i % 4] as string, projectId: SEEDED_PROJECTS[(i >> 2) % 4] as string, startedAt: seededStart(i) }));
}

/** The list's order: newest first, ties by id descending. */
export const newestFirst = (a: SeededJob, b: SeededJob) => (a.startedAt === b.startedAt ? (a.proposalId < b.proposalId ? 1 : -1) : a.startedAt < b.startedAt ? 1 : -1);

/** A seeded job's end in `state` at `at`: rc 0 when `exited ok`, else 1; no signal, no detail. */
export function seededEnd(state: string, at: string, stdoutLines = 3, stderrLines = 1): JobEnd {
  return { state, endedAt: at, rc: state === 'exited ok' ? 0 : 1, signal: null, stdoutLines, stderrLines, exitReason: state === 'lost' ? 'lost' : 'exited', exitDetail: null };
}

/** Writes `jobs` to the service's state database in one transaction. */
export function seedJobs(t: TestService, jobs: readonly SeededJob[]): void {
  const db = t.service.db;
  if (db === null) throw new Error('seedJobs: the test service runs on PostgreSQL, not its own SQLite file');
  const repo = new JobsRepo(db);
  db.transaction(() => {
    for (const j of jobs) {
      repo.insert({ proposalId: j.proposalId, projectId: j.projectId, pid: 4000, argv: ['node', 'dispatch', '--project', j.projectId], state: 'running', startedAt: j.startedAt });
      repo.finish(j.proposalId, seededEnd(j.state, j.startedAt));
    }
  })();
}
