/**
 * The messages between the supervisor (main thread, job-io.ts) and its job I/O thread
 * (job-io-main.ts), which forks the jobs through the spawn helper, reads and frames their
 * output and runs each job's state machine (job-state.ts JobMachine). Lines cross in batches, each as its event's JSON but the id and time where the bus can take
 * that (`encode`); the main thread stores and delivers them (ids stay global).
 */
import type { BirthPriority } from '../process/group-nice.js';
import type { JobSessions, SpawnOrder } from '../process/spawn-helper-protocol.js';
import type { Severity } from '../bus/event.js';
import type { JobOutcome, StopReason } from './job-state.js';

/** What the thread is started with (`workerData`). */
export interface JobIoSetup {
  /** The compiled spawn helper program (WORKER_FILES.spawnHelper). */
  readonly helperFile: string;
  /** CONSOLE_JOB_THREAD_NICE: the thread's own nice value (0..19), set after the helper is forked. */
  readonly nice: number;
  /** Lines cross as their events' JSON after the id and time (line-event.ts lineTail), not as texts: the bus takes them so (Bus.publishEncoded). */
  readonly encode: boolean;
}

/** Lines per batch (one bus flush), and lines posted and not acknowledged at which the thread stops reading pipes. */
export const BATCH_LINES = 512;
export const WINDOW_LINES = 4 * BATCH_LINES;
/** Ms a batch short of BATCH_LINES waits for more lines before it is posted (the bus stores at most every 5 ms anyway). */
export const BATCH_WAIT_MS = 2;

/** What to start (the helper's spawn order without its id and stream flags: both streams are always read), and the bound on a line. */
export type JobSpawnOrder = Pick<SpawnOrder, 'file' | 'args' | 'cwd' | 'env' | 'nice'> & {
  /** CONSOLE_LINE_MAX_BYTES: bound on one of its lines, bytes; longer lines are cut. */
  readonly lineMaxBytes: number;
  /** The job's proposal id, which its line events name in their detail. */
  readonly proposalId: string;
};

export type ToJobIo =
  /** Fork `file` in the helper; `key` names the job from now on (a small integer, not reused). */
  | (JobSpawnOrder & { readonly kind: 'spawn'; readonly key: number })
  /** Start reading the job's stdout and stderr (once its launch is recorded). */
  | { readonly kind: 'read'; readonly key: number }
  /** The job exited and was swept: read until both pipes end, or `idleMs` of silence, then report `drained`. */
  | { readonly kind: 'drain'; readonly key: number; readonly idleMs: number }
  /** Someone asked the job to stop (its signals go out from the main thread): its machine keeps the first reason. */
  | { readonly kind: 'stop'; readonly key: number; readonly reason: StopReason }
  /** Nobody will read the job (its launch was refused): close its pipes. */
  | { readonly kind: 'discard'; readonly key: number }
  /** `lines` posted lines were published: the window moves on. */
  | { readonly kind: 'ack'; readonly lines: number }
  /** Backpressure from the bus (output-gate.ts): no line is read while held. */
  | { readonly kind: 'hold'; readonly held: boolean }
  /** Let the helper go and end the thread; running jobs keep running. */
  | { readonly kind: 'close' }
  /** Answer with `pong` (the main thread's watchdog: a thread that does not is taken for hung). */
  | { readonly kind: 'ping'; readonly seq: number };

/**
 * One batch of framed lines, in the order each stream produced them: entry `i` is line `numbers[i]`
 * of job `keys[i]`'s stream `streams[i]` (0 stdout, 1 stderr), its text `text.slice(ends[i - 1] ?? 0, ends[i])`
 * (with `encode`, its event's JSON after the id and time instead); the indexes of lines cut at CONSOLE_LINE_MAX_BYTES
 * are listed in `cut`. The texts cross as one string: the main thread receives one string per batch, not one per line
 * (each a new string to collect there), and its slices of it are views, not copies.
 */
export interface LineBatch {
  readonly kind: 'lines';
  readonly keys: number[];
  readonly streams: number[];
  readonly numbers: number[];
  readonly text: string;
  /** End of each line's text in `text` (UTF-16 units, ascending). */
  readonly ends: number[];
  readonly cut: number[];
}

export type FromJobIo =
  /** The thread runs: the helper's pid, the thread's id and nice value (null where unknown). */
  | { readonly kind: 'ready'; readonly helperPid: number | null; readonly tid: number | null; readonly nice: number | null }
  /** The job runs: its machine accepted it (`severity`: the spawn event's). */
  | { readonly kind: 'spawned'; readonly key: number; readonly pid: number; readonly startTime: number | null; readonly lowered: BirthPriority | null; readonly severity: Severity }
  | { readonly kind: 'refused'; readonly key: number; readonly code: string | null; readonly message: string }
  | { readonly kind: 'exit'; readonly key: number; readonly code: number | null; readonly signal: NodeJS.Signals | null }
  | LineBatch
  /** Every line of the job was posted (before this message): its end as its machine decided it (null for a key the thread does not know). */
  | { readonly kind: 'drained'; readonly key: number; readonly end: JobOutcome | null }
  /** The spawn helper listens: how it groups the jobs for the scheduler (spawn-helper-protocol.ts JobSessions). */
  | { readonly kind: 'helper-ready'; readonly sessions: JobSessions }
  /** The spawn helper process ended while the service runs: the jobs' exits cannot be learnt any more. */
  | { readonly kind: 'helper-death'; readonly message: string }
  /** Answer to `close`: the helper exited. */
  | { readonly kind: 'closed' }
  /** Answer to `ping`. */
  | { readonly kind: 'pong'; readonly seq: number };
