/**
 * Errors of cluster mode (shared/design/cluster.md), each with its stable code; the HTTP
 * catalogue (src/http/errors.ts) maps them to statuses.
 */
import { ServiceError } from '../errors/index.js';

/** The codes of cluster mode's errors. */
export type ClusterErrorCode = 'owner_not_acknowledged' | 'instance_id_in_use';

/**
 * A request routed to the instance that runs a job or a terminal (a cancel, a terminal stop)
 * was not acknowledged within the wait (code `owner_not_acknowledged`): that instance did not
 * signal the process group in time (cluster.md, Jobs: "if the owner has not acted within 5 s,
 * 504"). A cancel stays recorded on the job.
 */
export class OwnerNotAcknowledgedError extends ServiceError<'owner_not_acknowledged'> {
  override name = 'OwnerNotAcknowledgedError';
  constructor(what: string, key: string, owner: string, waitedMs: number) {
    super('owner_not_acknowledged', `instance ${owner}, which runs ${key}, did not acknowledge the ${what} within ${waitedMs} ms`);
  }
}

/** Another live process heartbeats under this instance's id (code `instance_id_in_use`); start-up stops. */
export class InstanceIdInUseError extends ServiceError<'instance_id_in_use'> {
  override name = 'InstanceIdInUseError';
  constructor(id: string, address: string) {
    super('instance_id_in_use', `CONSOLE_INSTANCE_ID: another running instance uses the id ${id} (at ${address}): give each instance its own id`);
  }
}
