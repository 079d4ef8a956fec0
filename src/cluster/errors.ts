// Errors of cluster mode (cluster.md); src/http/errors.ts maps their codes to statuses.
import { ServiceError } from '../errors/index.js';

/** The codes of cluster mode's errors. */
export type ClusterErrorCode = 'owner_not_acknowledged' | 'instance_id_in_use';

/** The owner of a job or terminal did not acknowledge a routed cancel or stop in time (cluster.md, Jobs: 504); a cancel stays recorded. */
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
