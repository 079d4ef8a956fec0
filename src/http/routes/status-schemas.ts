/**
 * Zod schemas of the system status's job figures (`GET /api/system-status`, `jobs.*`): the jobs'
 * priority, the output's backpressure, the spawn helper and the job I/O thread.
 */
import { z } from 'zod';

/** `jobs.priority` of the system status (supervisor/job-priority.ts). */
export const PriorityStats = z
  .object({ nice: z.number().int(), lowered: z.number().int(), refused: z.number().int() })
  .meta({ description: 'CONSOLE_JOB_NICE, and the jobs whose CPU priority (and autogroup’s) was lowered below the service’s, or could not be.' });

/** `jobs.backpressure` of the system status (supervisor/output-gate.ts OutputGateStats). */
export const BackpressureStats = z.object({ backlogMax: z.number().int(), paused: z.boolean(), pauses: z.number().int(), pausedMs: z.number().int() }).meta({
  description: 'Backpressure on the jobs’ output: their pipes are not read while the bus holds CONSOLE_EVENT_BACKLOG_MAX events it has not stored; how often and how long since start-up.',
});

/** `jobs.spawner` of the system status (process/spawn-helper.ts SpawnHelperStats). */
export const SpawnerStats = z.object({ pid: z.number().int().nullable(), spawned: z.number().int(), refused: z.number().int(), running: z.number().int() }).meta({
  description:
    'The spawn helper process that forks every job (the service itself never forks one): its pid (null once it is gone, which stops the service), the jobs it started and the spawns refused since start-up, and the jobs it started that have not exited yet.',
});

/** `jobs.thread` of the system status (supervisor/job-io.ts JobIoThreadStats). */
export const JobIoThreadStats = z.object({ tid: z.number().int().nullable(), nice: z.number().int().nullable(), lines: z.number().int(), batches: z.number().int(), queued: z.number().int() }).meta({
  description:
    'The job I/O thread, which orders every spawn from the spawn helper and reads and frames every job’s stdout and stderr (the main thread never reads a job’s pipe): its kernel thread id (Linux; null elsewhere), its nice value (CONSOLE_JOB_THREAD_NICE, below the main thread’s, so the main thread goes first when the two compete for a CPU; null where unknown), the lines it handed to the main thread since start-up and the batches they came in (a batch holds at most 512 lines and waits at most 2 ms for more), and the lines handed over and not yet published (at most 2,048: past that it stops reading the pipes).',
});
