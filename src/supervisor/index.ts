export { Supervisor, GENERATION_SCOPE, JOB_ENV, type GenerationRequest, type SupervisorOptions } from './supervisor.js';
export {
  InvalidTransitionError,
  JobCapacityError,
  JobNotRunningError,
  SpawnError,
  ToolMissingError,
  UnknownJobError,
  type SupervisorErrorCode,
} from './errors.js';
export { transition, JOB_STATES, type JobStatus, type JobStateName, type JobTrigger } from './job-state.js';
export { frameLines, LineTurns, type FramedLine } from './frame-lines.js';
export { JobIo, type JobIoThreadStats, type RemoteJob } from './job-io.js';
export { lostJobEvent, publishLost } from './lost-jobs.js';
