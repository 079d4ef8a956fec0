/** The job I/O thread's client's types (job-io.ts): a job started there, its lines, the thread's figures. */
import type { BirthPriority } from '../process/group-nice.js';
import type { Severity } from '../bus/event.js';
import type { JobSpawnOrder } from './job-io-protocol.js';
import type { JobOutcome, StopReason } from './job-state.js';

/**
 * One line of a job: `stream` 0 is stdout, 1 stderr; `number` counts from 1 per stream; `cut` when bytes were dropped.
 * `text` is the line's, or where the job is {@link RemoteJob.encoded} its event's JSON after the id and time.
 */
export type JobLineHandler = (stream: 0 | 1, number: number, text: string, cut: boolean) => void;

/** What to start: the program, its arguments, working directory, whole environment, bound on a line, and the proposal id its line events name. */
export type JobSpawn = JobSpawnOrder;

/** A job the thread started: its pid, its exit, its lines once asked for, and its state machine's decisions (job-state.ts JobMachine, run on the thread). */
export interface RemoteJob {
  readonly pid: number;
  /** Its start time (clock ticks after boot), read before it could be reaped; null without `/proc`. */
  readonly startTime: number | null;
  /** What setting the order's nice value did, in the helper right after its exec (null when none was asked for). */
  readonly lowered: BirthPriority | null;
  /** Its machine accepted it: the spawn event's severity. */
  readonly accepted: Severity;
  /** Resolves at its exit with Node's pair: a code, or the signal that ended it. */
  readonly exit: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
  /** Its lines reach the handler as their events' JSON after the id and time (line-event.ts lineTail), not as texts. */
  readonly encoded: boolean;
  /** Starts reading its stdout and stderr: every line reaches `onLine` on this thread, in each stream's order. */
  read(onLine: JobLineHandler): void;
  /** Someone asked it to stop (the signals are the caller's to send): its machine keeps the first reason, its exit's. */
  stop(reason: StopReason): void;
  /**
   * Called after its exit (and sweep): resolves once its last line reached the handler, or once
   * its pipes were given up after `idleMs` without a byte (a daemon kept one open). Never rejects.
   * @returns its end as its machine decided it (final status, severity, reason, a failure's last stderr line, line counts); null once the thread is gone.
   */
  drain(idleMs: number): Promise<JobOutcome | null>;
  /** Nobody will read it (its launch was refused): its pipes are closed. */
  discard(): void;
}

/** The thread's own figures (`jobs.thread` of the system status). */
export interface JobIoThreadStats {
  /** Its kernel thread id (Linux), null elsewhere or before it started. */
  readonly tid: number | null;
  /** Its nice value (CONSOLE_JOB_THREAD_NICE once set), null where unknown. */
  readonly nice: number | null;
  /** Lines read and handed to the main thread since start-up, and the batches they came in. */
  readonly lines: number;
  readonly batches: number;
  /** Lines posted and not yet handed on (bounded by the window). */
  readonly queued: number;
  /** Its young generation's bound in force, MB (CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB, or V8's default for 0); null once it ended. */
  readonly youngGenerationMb: number | null;
}

/** How the thread is bounded (JobIo's constructor): its heap, and how long it may leave a ping unanswered. */
export interface JobIoLimits {
  /** Its young generation, MB; 0 leaves V8's default (default: job-io.ts JOB_IO_YOUNG_GENERATION_MB). */
  readonly youngGenerationMb?: number;
  /** Ms the thread may leave a ping unanswered before it is taken for dead (hung; answer-watchdog.ts; CONSOLE_THREAD_ANSWER_LIMIT_MS, default 60 s). */
  readonly answerLimitMs?: number;
}
