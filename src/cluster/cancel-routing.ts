/**
 * Cancel from any instance (cluster.md, Jobs): only the instance that runs a job can signal its process
 * group, so a cancel elsewhere is recorded on the job and routed to the owner (owner-requests.ts).
 */
import type { JobRecord } from '../state/records.js';
import type { StateStore } from '../state/state-store.js';
import { JobNotRunningError, type Supervisor } from '../supervisor/index.js';
import { OwnerRequests } from './owner-requests.js';

/** Cancels routed to their owner: payload `<owner instance id> <proposal id>`. */
export const CANCEL_CHANNEL = 'console_cancel';
/** Their acknowledgements: payload `<proposal id> done|not_running`. */
export const CANCEL_ACK_CHANNEL = 'console_cancel_ack';

/** What the cancel route calls: the supervisor on one instance, {@link RoutedCancels} in a cluster. */
export interface JobCanceller {
  /** @throws UnknownJobError, JobNotRunningError; in a cluster OwnerNotAcknowledgedError (504 after 5 s). */
  cancel(proposalId: string): Promise<JobRecord>;
}

/** Cancels of a cluster instance (see the module's comment). */
export class RoutedCancels implements JobCanceller {
  readonly requests: OwnerRequests;

  /** @param notify sends a notification to every instance. */
  constructor(
    private readonly supervisor: Supervisor,
    private readonly store: StateStore,
    private readonly self: string,
    notify: (channel: string, payload: string) => Promise<void>,
  ) {
    this.requests = new OwnerRequests({
      self,
      what: 'cancel',
      channel: CANCEL_CHANNEL,
      ackChannel: CANCEL_ACK_CHANNEL,
      notify,
      handle: async (proposalId) => {
        if (!supervisor.runsHere(proposalId)) return 'not_running';
        return supervisor.cancel(proposalId).then(
          () => 'done' as const,
          () => 'not_running' as const,
        );
      },
    });
  }

  async cancel(proposalId: string): Promise<JobRecord> {
    if (this.supervisor.runsHere(proposalId)) return this.supervisor.cancel(proposalId);
    const stored = await this.store.jobs.get(proposalId);
    // Unknown, ended, or this instance's own (ended here): answered as on one instance.
    if (stored?.state !== 'running' || stored.instanceId === this.self) return this.supervisor.cancel(proposalId);
    await this.store.jobs.markCancelRequested(proposalId);
    const outcome = await this.requests.ask(stored.instanceId, proposalId);
    const now = (await this.store.jobs.get(proposalId)) ?? stored;
    if (outcome === 'not_running') throw new JobNotRunningError(now.state === 'running' ? stored : now);
    return { ...now, cancelRequested: true };
  }
}
