/**
 * Errors of the generation supervisor (spec: Generation, rules 3; api-decisions.md, Jobs and
 * "Network and safety defaults"). The HTTP layer maps them to statuses (src/http/errors.ts).
 */
import type { JobRecord } from '../state/jobs-repo.js';

/** The dispatch tool file does not exist; no process was started. */
export class ToolMissingError extends Error {
  override name = 'ToolMissingError';
  constructor(readonly file: string) {
    super(`dispatch tool not found: ${file}`);
  }
}

/** The running-jobs cap is reached; no process was started. */
export class JobCapacityError extends Error {
  override name = 'JobCapacityError';
  constructor(
    readonly limit: number,
    /** Suggested wait before retrying, in seconds. */
    readonly retryAfterSeconds: number,
  ) {
    super(`too many running generation jobs (limit ${limit}); retry in ${retryAfterSeconds} s`);
  }
}

/** The operating system refused to start the child. */
export class SpawnError extends Error {
  override name = 'SpawnError';
}

export class UnknownJobError extends Error {
  override name = 'UnknownJobError';
  constructor(readonly proposalId: string) {
    super(`unknown job ${proposalId}`);
  }
}

export class JobNotRunningError extends Error {
  override name = 'JobNotRunningError';
  constructor(readonly job: JobRecord) {
    super(`job ${job.proposalId} is not running (state ${job.state})`);
  }
}
