/**
 * Errors of cluster mode (shared/design/cluster.md), each with its stable code; the HTTP
 * catalogue (src/http/errors.ts) maps them to statuses.
 */
import { ServiceError } from '../errors/index.js';

/** The codes of cluster mode's errors. */
export type ClusterErrorCode = 'cancel_not_acknowledged' | 'instance_id_in_use';

/**
 * A cancel routed to the instance that runs the job was not acknowledged within the wait
 * (code `cancel_not_acknowledged`): that instance did not signal the job's process group in
 * time (cluster.md, Jobs: "if the owner has not acted within 5 s, 504"). The cancel stays
 * recorded: the owner acts on it when it can.
 */
export class CancelNotAcknowledgedError extends ServiceError<'cancel_not_acknowledged'> {
  override name = 'CancelNotAcknowledgedError';
  constructor(
    readonly proposalId: string,
    readonly owner: string,
    waitedMs: number,
  ) {
    super('cancel_not_acknowledged', `instance ${owner}, which runs job ${proposalId}, did not acknowledge the cancel within ${waitedMs} ms`);
  }
}

/** Another live process heartbeats under this instance's id (code `instance_id_in_use`); start-up stops. */
export class InstanceIdInUseError extends ServiceError<'instance_id_in_use'> {
  override name = 'InstanceIdInUseError';
  constructor(id: string, address: string) {
    super('instance_id_in_use', `CONSOLE_INSTANCE_ID: another running instance uses the id ${id} (at ${address}): give each instance its own id`);
  }
}
