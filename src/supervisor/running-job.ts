/**
 * A running job as the main thread serves it (service-spec.md §States and transitions): its managed process
 * and a mirror of its state machine, which runs on the job I/O thread (job-state.ts JobMachine): live line
 * counts as its lines are published, its final state once the thread decided it.
 */
import type { JobEnd, JobGuard } from '../bus/event.js';
import type { JobRecord } from '../state/records.js';
import type { ManagedProcess } from '../process/index.js';
import type { RemoteJob } from './job-io.js';
import type { ExitReason, JobOutcome, JobStatus, StopReason } from './job-state.js';

/** Scope of every generation event (service-spec.md §Events). */
export const GENERATION_SCOPE = 'engine/generation';

/** Marks every process of a job (inherited), so /proc finds even orphans that left the group, after a service death too. */
export const JOB_ENV = 'CONSOLE_JOB_ID';

/** The environment entry that marks the processes of job `proposalId`. */
export const jobMark = (proposalId: string): string => `${JOB_ENV}=${proposalId}`;

/** One running job of the supervisor; `record()` is its API shape with live figures. Changed by the supervisor only, from what the thread tells it. */
export class RunningJob {
  status: JobStatus = { state: 'running' };
  stdoutLines = 0;
  stderrLines = 0;
  cancelRequested = false;
  /** Who asked it to stop first (its machine on the thread is told, and decides the exit's reason with it). */
  stopReason: StopReason | null = null;
  exitReason: ExitReason | null = null;
  exitDetail: string | null = null;
  endedAt: string | null = null;
  /** Resolves once the exit is published (set when supervision starts). */
  finished: Promise<void> = Promise.resolve();
  /** Marked `lost` by another instance (this one judged dead): tree killed, nothing more published (cluster.md). */
  fenced = false;
  /** The guard every event of the job carries (bus/event.ts JobGuard): one object for all its lines. */
  readonly guard: JobGuard;

  constructor(
    readonly proposalId: string,
    readonly projectId: string,
    readonly argv: readonly string[],
    readonly startedAt: string,
    readonly proc: ManagedProcess,
    /** Its output, read and framed on the job I/O thread. */
    readonly output: RemoteJob,
  ) {
    this.guard = Object.freeze({ job: proposalId });
  }

  /** Someone asked it to stop: the first reason is kept, here and by its machine (the signals are the caller's). */
  askStop(reason: StopReason): void {
    this.stopReason ??= reason;
    this.output.stop(reason);
  }

  /** Mirrors the outcome its machine decided, ended now. @returns its final state's columns, as they commit with the exit event. */
  ended(outcome: JobOutcome): JobEnd {
    this.status = outcome.status;
    this.endedAt = new Date().toISOString();
    this.exitReason = outcome.exitReason;
    this.exitDetail = outcome.exitDetail;
    this.stdoutLines = outcome.stdoutLines;
    this.stderrLines = outcome.stderrLines;
    const { state, rc, signal } = outcome.status;
    const { endedAt, stdoutLines, stderrLines, exitReason, exitDetail } = this;
    return { state, endedAt, rc, signal, stdoutLines, stderrLines, exitReason, exitDetail };
  }

  record(): JobRecord {
    const s = this.status;
    return {
      proposalId: this.proposalId,
      projectId: this.projectId,
      pid: this.proc.pid,
      argv: this.argv,
      state: s.state,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      rc: s.state === 'exited ok' || s.state === 'exited failed' ? s.rc : null,
      signal: s.state === 'exited ok' || s.state === 'exited failed' ? s.signal : null,
      stdoutLines: this.stdoutLines,
      stderrLines: this.stderrLines,
      cancelRequested: this.cancelRequested,
      exitReason: this.exitReason,
      exitDetail: this.exitDetail,
    };
  }
}
