/** Generation job states and transitions (service-spec.md §States and transitions), one function a test walks row by row (style.md). */
import type { Severity } from '../bus/event.js';
import { InvalidTransitionError } from './errors.js';

export { InvalidTransitionError } from './errors.js';

export type JobStatus =
  | { readonly state: 'running' }
  | {
      readonly state: 'exited ok' | 'exited failed';
      /** 128 + the signal number when a signal killed it (shell convention). */
      readonly rc: number;
      readonly signal: NodeJS.Signals | null;
    }
  | { readonly state: 'lost' };

export type JobStateName = JobStatus['state'];
export const JOB_STATES: readonly JobStateName[] = ['running', 'exited ok', 'exited failed', 'lost'];

/** Why a job ended, its record's `exitReason`; `spawn failed`: the OS refused the tool, recorded failed at once without a pid. */
export const EXIT_REASONS = ['exited', 'cancelled', 'shutdown', 'lost', 'spawn failed'] as const;
export type ExitReason = (typeof EXIT_REASONS)[number];

export type JobTrigger =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'stdout-line' }
  | { readonly kind: 'stderr-line' }
  | { readonly kind: 'exit'; readonly rc: number; readonly signal: NodeJS.Signals | null }
  | { readonly kind: 'lost' };

/** Shared line rows, not rebuilt per output line. */
const RUNNING: JobStatus = Object.freeze({ state: 'running' });
const STDOUT_LINE = Object.freeze({ next: RUNNING, severity: 'info' as Severity });
const STDERR_LINE = Object.freeze({ next: RUNNING, severity: 'warning' as Severity });

/** One table row: from `current` (null before the job exists) on `trigger`, the next status and the event's severity. @throws InvalidTransitionError otherwise. */
export function transition(current: JobStatus | null, trigger: JobTrigger): { readonly next: JobStatus; readonly severity: Severity } {
  if (current === null) {
    if (trigger.kind === 'accepted') return { next: RUNNING, severity: 'info' };
  } else if (current.state === 'running') {
    switch (trigger.kind) {
      case 'stdout-line':
        return STDOUT_LINE;
      case 'stderr-line':
        return STDERR_LINE;
      case 'exit':
        return trigger.rc === 0
          ? { next: { state: 'exited ok', rc: 0, signal: trigger.signal }, severity: 'success' }
          : { next: { state: 'exited failed', rc: trigger.rc, signal: trigger.signal }, severity: 'failure' };
      case 'lost':
        return { next: { state: 'lost' }, severity: 'failure' };
      case 'accepted':
        break;
    }
  }
  throw new InvalidTransitionError(`no transition from ${current?.state ?? '(none)'} on ${trigger.kind}`);
}

/** A job's status after its exit. */
export type EndedStatus = Extract<JobStatus, { readonly state: 'exited ok' | 'exited failed' }>;

/** Who asked a job to stop first: a cancel request or the service's shutdown (its exit's reason then). */
export type StopReason = 'cancelled' | 'shutdown';

/** A job's end as its state machine decided it: the final status, the exit event's severity, why it ended, a failure's last words, its lines. */
export interface JobOutcome {
  readonly status: EndedStatus;
  readonly severity: Severity;
  readonly exitReason: ExitReason;
  /** The tool's last stderr line when it failed, else null. */
  readonly exitDetail: string | null;
  readonly stdoutLines: number;
  readonly stderrLines: number;
}

/**
 * The end of a running job that exited with `rc` (128 + the signal's number when `signal` ended it): whoever asked it
 * to stop first, else by itself; a failure says its last words. Used by {@link JobMachine}, and by the supervisor
 * for a job whose machine is gone with its thread. @throws InvalidTransitionError when `status` is not running.
 */
export function jobOutcome(
  status: JobStatus,
  rc: number,
  signal: NodeJS.Signals | null,
  stopReason: StopReason | null,
  lastStderr: string | null,
  stdoutLines: number,
  stderrLines: number,
): JobOutcome {
  const { next, severity } = transition(status, { kind: 'exit', rc, signal });
  if (next.state !== 'exited ok' && next.state !== 'exited failed') throw new InvalidTransitionError(`an exit from ${status.state} to ${next.state}`);
  return { status: next, severity, exitReason: stopReason ?? 'exited', exitDetail: next.state === 'exited failed' ? lastStderr : null, stdoutLines, stderrLines };
}

/**
 * One job's state machine, run where its output is read (the job I/O thread, job-io-main.ts): accepted at its spawn,
 * each line a transition that counts it, the first stop request kept, its end decided once its pipes drained.
 * The supervisor on the main thread mirrors what it is told (running-job.ts). @throws InvalidTransitionError on a
 * trigger the table has no row for (a line or an exit after the end: a bug).
 */
export class JobMachine {
  private status: JobStatus;
  /** The accepted transition's severity: the spawn event's. */
  readonly accepted: Severity;
  stdoutLines = 0;
  stderrLines = 0;
  /** The tool's last stderr line (bounded by CONSOLE_LINE_MAX_BYTES like every line). */
  private lastStderr: string | null = null;
  private stopReason: StopReason | null = null;

  constructor() {
    const { next, severity } = transition(null, { kind: 'accepted' });
    this.status = next;
    this.accepted = severity;
  }

  /** A line read on `stream` (0 stdout, 1 stderr). @returns its event's severity. */
  line(stream: 0 | 1, text: string): Severity {
    const { next, severity } = transition(this.status, stream === 0 ? STDOUT_TRIGGER : STDERR_TRIGGER);
    this.status = next;
    if (stream === 0) this.stdoutLines++;
    else {
      this.stderrLines++;
      this.lastStderr = text;
    }
    return severity;
  }

  /** Someone asked it to stop; the first reason stays. */
  stop(reason: StopReason): void {
    this.stopReason ??= reason;
  }

  /** Its exit, once every line was read: the end. */
  end(rc: number, signal: NodeJS.Signals | null): JobOutcome {
    const end = jobOutcome(this.status, rc, signal, this.stopReason, this.lastStderr, this.stdoutLines, this.stderrLines);
    this.status = end.status;
    return end;
  }
}

const STDOUT_TRIGGER: JobTrigger = Object.freeze({ kind: 'stdout-line' });
const STDERR_TRIGGER: JobTrigger = Object.freeze({ kind: 'stderr-line' });
