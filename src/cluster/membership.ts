/**
 * The instances of a cluster (shared/design/cluster.md, "Switching it on", Jobs, Operations):
 * this instance's record and heartbeat, the refusal of a second process under one id, and the
 * judgement of dead instances, whose running jobs are marked `lost` exactly once, by one
 * survivor, and whose terminals are ended.
 *
 * - Heartbeat: every `heartbeatMs` (1 s) the instance moves its `heartbeat_at` and records its
 *   open streams.
 * - Dead: an instance whose heartbeat is older than `timeoutMs`. Staleness is only judged
 *   while this instance has itself been connected for a whole timeout, so after a database
 *   outage every instance gets a full timeout to beat again before it can be judged.
 * - Exactly once: marking lost is one conditional UPDATE (`… WHERE state = 'running'`): of any
 *   number of survivors judging at once, each job is returned to exactly one, which publishes
 *   its `dispatch_cli lost pid=N` event.
 * - Listed: a dead instance stays in the list (`alive: false`) for an hour, then is pruned.
 */
import type { Bus } from '../bus/bus-api.js';
import type { InstanceRecord, StateStore } from '../state/state-store.js';
import { lostJobEvent } from '../supervisor/index.js';
import { InstanceIdInUseError } from './errors.js';

/** An instance as the system status lists it (cluster.md, Operations). */
export interface InstanceView extends InstanceRecord {
  readonly alive: boolean;
  /** Its jobs the database records as running. */
  readonly runningJobs: number;
}

export interface MembershipOptions {
  readonly id: string;
  /** `http://host:port`: where the instance is reached. */
  readonly address: string;
  readonly version: string;
  /** CONSOLE_INSTANCE_TIMEOUT_MS. */
  readonly timeoutMs: number;
  /** Time between heartbeats, ms (default 1000). */
  readonly heartbeatMs?: number;
  /** This instance's open event streams, recorded with each heartbeat. */
  readonly streamClients: () => number;
  /** Told of the jobs and terminals this instance marked for a dead instance (the log says so). */
  readonly onJudged?: (deadId: string, jobs: number, terminals: number) => void;
  /** Told when a heartbeat fails and when they work again (the log says so). */
  readonly onConnection?: (connected: boolean, err?: unknown) => void;
}

/** How long a dead instance stays listed, ms. */
const LISTED_DEAD_MS = 3_600_000;

/** This instance's membership of the cluster (see the module's comment). */
export class Membership {
  private timer: NodeJS.Timeout | undefined;
  /** Since when heartbeats succeed without a failure in between (ms), or null after a failure. */
  private connectedSince: number | null = null;
  private beating: Promise<void> | null = null;
  private readonly heartbeatMs: number;
  private readonly startedAt = new Date().toISOString();

  constructor(
    private readonly store: StateStore,
    private readonly bus: Bus,
    private readonly opts: MembershipOptions,
  ) {
    this.heartbeatMs = opts.heartbeatMs ?? 1000;
  }

  get id(): string {
    return this.opts.id;
  }

  /**
   * Registers this instance. When its id is recorded with a recent heartbeat, waits up to two
   * heartbeat intervals: a heartbeat that moves meanwhile belongs to a live process, and this
   * start is refused; one that does not is a crashed run of this instance, whose id it takes over.
   * @returns when the id's earlier run started (its jobs since then may have been marked lost
   *   by another instance), or null for a new id.
   * @throws InstanceIdInUseError; the state store's errors.
   */
  async join(): Promise<string | null> {
    const before = await this.store.instances.get(this.opts.id);
    if (before && Date.now() - Date.parse(before.heartbeatAt) < this.opts.timeoutMs) {
      await new Promise((r) => setTimeout(r, 2 * this.heartbeatMs + 200));
      const after = await this.store.instances.get(this.opts.id);
      if (after && after.heartbeatAt !== before.heartbeatAt) throw new InstanceIdInUseError(this.opts.id, after.address);
    }
    await this.store.instances.register({ id: this.opts.id, address: this.opts.address, version: this.opts.version, startedAt: this.startedAt });
    this.connectedSince = Date.now();
    return before?.startedAt ?? null;
  }

  /** Starts the heartbeat and the judgement of dead instances. */
  start(): void {
    this.timer = setInterval(() => {
      this.beating ??= this.beat().finally(() => {
        this.beating = null;
      });
    }, this.heartbeatMs);
    this.timer.unref();
  }

  private async beat(): Promise<void> {
    const now = Date.now();
    try {
      const known = await this.store.instances.heartbeat(this.opts.id, new Date(now).toISOString(), this.opts.streamClients());
      // Pruned while this instance could not beat (a long outage): recorded again.
      if (!known) await this.store.instances.register({ id: this.opts.id, address: this.opts.address, version: this.opts.version, startedAt: this.startedAt });
      if (this.connectedSince === null) {
        this.connectedSince = now;
        this.opts.onConnection?.(true);
      }
    } catch (err) {
      if (this.connectedSince !== null) this.opts.onConnection?.(false, err);
      this.connectedSince = null;
      return;
    }
    if (now - this.connectedSince < this.opts.timeoutMs) return;
    await this.judge(now).catch(() => {});
  }

  /** Marks the running jobs and terminals of every dead instance; prunes those dead for an hour. */
  private async judge(now: number): Promise<void> {
    const endedAt = new Date(now).toISOString();
    for (const i of await this.store.instances.list()) {
      if (i.id === this.opts.id || now - Date.parse(i.heartbeatAt) <= this.opts.timeoutMs) continue;
      const jobs = await this.store.jobs.markLost(i.id, endedAt);
      for (const job of jobs) this.bus.publish(lostJobEvent(job, `instance ${i.id} stopped beating while job ${job.proposalId} ran (last heartbeat ${i.heartbeatAt})`));
      const terminals = await this.store.terminals.endAllOf(i.id, 'exited', endedAt);
      if (jobs.length > 0 || terminals.length > 0) this.opts.onJudged?.(i.id, jobs.length, terminals.length);
    }
    await this.store.instances.prune(new Date(now - LISTED_DEAD_MS).toISOString());
  }

  /** Every instance, alive or dead within the hour, with its running jobs. */
  async list(): Promise<InstanceView[]> {
    const [instances, running] = await Promise.all([this.store.instances.list(), this.store.jobs.running()]);
    const now = Date.now();
    const byOwner = new Map<string, number>();
    for (const j of running) byOwner.set(j.instanceId, (byOwner.get(j.instanceId) ?? 0) + 1);
    return instances.map((i) => ({ ...i, alive: now - Date.parse(i.heartbeatAt) <= this.opts.timeoutMs, runningJobs: byOwner.get(i.id) ?? 0 }));
  }

  /** Stops the heartbeat (shutdown); the record stays, and ages into `alive: false`. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.beating;
  }
}
