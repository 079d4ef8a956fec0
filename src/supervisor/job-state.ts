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
