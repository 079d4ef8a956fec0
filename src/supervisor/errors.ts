/** Supervisor errors with stable codes (service-spec.md §Generation, api-decisions.md); src/http/errors.ts maps them to statuses. */
import { ServiceError } from '../errors/index.js';
import type { ProcessSpawnError } from '../process/errors.js';
import type { JobRecord } from '../state/records.js';

/** The codes of the supervisor's errors. */
export type SupervisorErrorCode = 'tool_missing' | 'job_capacity' | 'spawn_failed' | 'unknown_job' | 'job_not_running' | 'invalid_transition';

/** The dispatch tool file does not exist (code `tool_missing`); no process was started. */
export class ToolMissingError extends ServiceError<'tool_missing'> {
  override name = 'ToolMissingError';
  constructor(readonly file: string) {
    super('tool_missing', `dispatch tool not found: ${file}`);
  }
}

/** The running-jobs cap is reached (code `job_capacity`); no process was started. */
export class JobCapacityError extends ServiceError<'job_capacity'> {
  override name = 'JobCapacityError';
  constructor(
    readonly limit: number,
    retryAfterSeconds: number,
  ) {
    super('job_capacity', `too many running generation jobs (limit ${limit}); retry in ${retryAfterSeconds} s`, { retryAfterSeconds });
  }
}

/** The OS refused to start the dispatch tool (code `spawn_failed`), the refusal the `cause`; the message names its errno once `settled`. */
export class SpawnError extends ServiceError<'spawn_failed'> {
  override name = 'SpawnError';
  readonly settled: Promise<void>;
  constructor(message: string, options: { readonly cause: ProcessSpawnError }) {
    super('spawn_failed', message, options);
    const refusal = options.cause;
    const named = () => {
      if (refusal.errno !== undefined) this.message = `${message} (${refusal.errno})`;
    };
    named();
    this.settled = refusal.settled.then(named);
  }
}

/** No job has this proposal id (code `unknown_job`). */
export class UnknownJobError extends ServiceError<'unknown_job'> {
  override name = 'UnknownJobError';
  constructor(readonly proposalId: string) {
    super('unknown_job', `unknown job ${proposalId}`);
  }
}

/** The job has ended already (code `job_not_running`). */
export class JobNotRunningError extends ServiceError<'job_not_running'> {
  override name = 'JobNotRunningError';
  constructor(readonly job: JobRecord) {
    super('job_not_running', `job ${job.proposalId} is not running (state ${job.state})`);
  }
}

/** A trigger the job state table has no row for (code `invalid_transition`): a supervisor bug, answered 500 `internal`. */
export class InvalidTransitionError extends ServiceError<'invalid_transition'> {
  override name = 'InvalidTransitionError';
  constructor(message: string) {
    super('invalid_transition', message);
  }
}
