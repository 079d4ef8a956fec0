/**
 * Cancel from any instance (shared/design/cluster.md, Jobs): a job runs on the instance that
 * received its request, and only that instance can signal its process group. A cancel sent to
 * another instance is recorded on the job, then routed to the owner through the database
 * (NOTIFY on {@link CANCEL_CHANNEL}); the owner cancels as on one instance and acknowledges
 * once it signalled the process group ({@link CANCEL_ACK_CHANNEL}). The answer is the one
 * instance's: 202 with the job, 409 when it is not running (also when it ended before the owner
 * acted), and, when the owner has not acknowledged within 5 s, a 504 (`cancel_not_acknowledged`).
 */
import type { JobRecord } from '../state/jobs-repo.js';
import type { StateStore } from '../state/state-store.js';
import { JobNotRunningError, type Supervisor } from '../supervisor/index.js';
import { CancelNotAcknowledgedError } from './errors.js';

/** Cancels routed to their owner: payload `<owner instance id> <proposal id>`. */
export const CANCEL_CHANNEL = 'console_cancel';
/** Their acknowledgements: payload `<proposal id> signalled|not_running`. */
export const CANCEL_ACK_CHANNEL = 'console_cancel_ack';

/** What the cancel route calls: the supervisor on one instance, {@link RoutedCancels} in a cluster. */
export interface JobCanceller {
  /**
   * Cancels a running job.
   * @throws UnknownJobError, JobNotRunningError; in a cluster CancelNotAcknowledgedError.
   */
  cancel(proposalId: string): Promise<JobRecord>;
}

type Outcome = 'signalled' | 'not_running';

export interface RoutedCancelsOptions {
  /** This instance's id. */
  readonly self: string;
  /** Sends a notification to every instance. */
  readonly notify: (channel: string, payload: string) => Promise<void>;
  /** How long a routed cancel waits for the owner, ms (default 5000). */
  readonly waitMs?: number;
}

/** Cancels of a cluster instance (see the module's comment). */
export class RoutedCancels implements JobCanceller {
  private readonly waiting = new Map<string, Set<(o: Outcome) => void>>();
  private readonly waitMs: number;

  constructor(
    private readonly supervisor: Supervisor,
    private readonly store: StateStore,
    private readonly options: RoutedCancelsOptions,
  ) {
    this.waitMs = options.waitMs ?? 5000;
  }

  async cancel(proposalId: string): Promise<JobRecord> {
    if (this.supervisor.runsHere(proposalId)) return this.supervisor.cancel(proposalId);
    const stored = await this.store.jobs.get(proposalId);
    // Unknown, ended, or this instance's own (ended here): answered as on one instance.
    if (!stored || stored.state !== 'running' || stored.instanceId === this.options.self) return this.supervisor.cancel(proposalId);
    const { instanceId: owner, ...job } = stored;
    await this.store.jobs.markCancelRequested(proposalId);
    const outcome = await this.ask(proposalId, owner);
    const { instanceId: _owner, ...now } = (await this.store.jobs.get(proposalId)) ?? stored;
    if (outcome === 'not_running') throw new JobNotRunningError(now.state === 'running' ? job : now);
    return { ...now, cancelRequested: true };
  }

  /** The owner's side: a cancel routed here is carried out, then acknowledged. Never throws. */
  onCancel(payload: string): void {
    const [owner, proposalId] = payload.split(' ');
    if (owner !== this.options.self || proposalId === undefined) return;
    const ack = (o: Outcome) => void this.options.notify(CANCEL_ACK_CHANNEL, `${proposalId} ${o}`).catch(() => {});
    if (!this.supervisor.runsHere(proposalId)) return ack('not_running');
    this.supervisor.cancel(proposalId).then(
      () => ack('signalled'),
      () => ack('not_running'),
    );
  }

  /** The asking side: an acknowledgement wakes the cancels waiting for it. */
  onAck(payload: string): void {
    const [proposalId, outcome] = payload.split(' ');
    const waiters = this.waiting.get(proposalId ?? '');
    if (!waiters || (outcome !== 'signalled' && outcome !== 'not_running')) return;
    for (const w of [...waiters]) w(outcome);
  }

  private ask(proposalId: string, owner: string): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      let waiters = this.waiting.get(proposalId);
      if (!waiters) this.waiting.set(proposalId, (waiters = new Set()));
      const set = waiters;
      const settle = () => {
        clearTimeout(timer);
        set.delete(done);
        if (set.size === 0) this.waiting.delete(proposalId);
      };
      const done = (o: Outcome) => {
        settle();
        resolve(o);
      };
      const timer = setTimeout(() => {
        settle();
        reject(new CancelNotAcknowledgedError(proposalId, owner, this.waitMs));
      }, this.waitMs);
      set.add(done);
      this.options.notify(CANCEL_CHANNEL, `${owner} ${proposalId}`).catch((err: unknown) => {
        settle();
        reject(err);
      });
    });
  }
}
