/**
 * Cluster membership (cluster.md §Jobs, §Operations): heartbeats under an epoch, one live process per id, and judgement of dead
 * instances only after a whole timeout connected; a dead one's jobs are marked `lost` once, and a slow one finds its epoch moved.
 */
import type { Bus } from '../bus/bus-api.js';
import type { InstanceRecord, StateStore } from '../state/state-store.js';
import { publishLost } from '../supervisor/index.js';
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
  /** Called when this instance finds it was judged dead, before it registers again: fences its jobs marked lost; resolves to how many. */
  readonly onFenced?: () => Promise<number>;
  /** Told once this instance registered again after it was judged dead (the log says so). */
  readonly onRejoined?: (fencedJobs: number) => void;
}

const LISTED_DEAD_MS = 3_600_000;

/** This instance's membership of the cluster (see the module's comment). */
export class Membership {
  private timer: NodeJS.Timeout | undefined;
  private connectedSince: number | null = null;
  private beating: Promise<void> | null = null;
  private judging: Promise<void> | null = null;
  private readonly heartbeatMs: number;
  private readonly startedAt = new Date().toISOString();
  private epoch = 0;
  private recheck = false;

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
   * Registers this instance. An id with a recent heartbeat is watched for two intervals: if it moves, a live
   * process holds it and this start is refused; if not, it was a crashed run, taken over.
   * @returns when the id's earlier run started (its jobs since may have been marked lost), or null for a new id.
   * @throws InstanceIdInUseError; the state store's errors.
   */
  async join(): Promise<string | null> {
    const before = await this.store.instances.get(this.opts.id);
    if (before && Date.now() - Date.parse(before.heartbeatAt) < this.opts.timeoutMs) {
      await new Promise((r) => setTimeout(r, 2 * this.heartbeatMs + 200));
      const after = await this.store.instances.get(this.opts.id);
      if (after && after.heartbeatAt !== before.heartbeatAt) throw new InstanceIdInUseError(this.opts.id, after.address);
    }
    await this.register();
    this.connectedSince = Date.now();
    return before?.startedAt ?? null;
  }

  /** A heartbeat of now, not of the start: the join may have waited. */
  private async register(): Promise<void> {
    this.epoch = await this.store.instances.register({
      id: this.opts.id,
      address: this.opts.address,
      version: this.opts.version,
      startedAt: this.startedAt,
      heartbeatAt: new Date().toISOString(),
    });
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
      const current = await this.store.instances.heartbeat(this.opts.id, new Date(now).toISOString(), this.opts.streamClients(), this.epoch);
      if (!current) {
        // Judged dead while it could not beat: what was marked lost meanwhile is fenced before it rejoins.
        const fenced = (await this.opts.onFenced?.()) ?? 0;
        await this.register();
        // A judge that started its epoch just before may still be marking: look once more.
        this.recheck = true;
        this.opts.onRejoined?.(fenced);
      } else if (this.recheck) {
        this.recheck = false;
        await this.opts.onFenced?.();
      }
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
    // Judged beside the heartbeats: a slow judgement must not stop this instance's own.
    this.judging ??= this.judge(now)
      .catch(() => {})
      .finally(() => {
        this.judging = null;
      });
  }

  /** Marks the running jobs and terminals of every dead instance; prunes those dead for an hour. */
  private async judge(now: number): Promise<void> {
    const endedAt = new Date(now).toISOString();
    for (const i of await this.store.instances.list()) {
      if (i.id === this.opts.id || now - Date.parse(i.heartbeatAt) <= this.opts.timeoutMs) continue;
      const running = await this.store.jobs.running(i.id);
      if (running.length === 0 && !(await this.store.terminals.list()).some((t) => t.instanceId === i.id && t.state === 'running')) continue;
      // A new epoch first, so a merely paused instance learns it was judged; skipped if it beat meanwhile.
      if (!(await this.store.instances.judge(i.id, i.heartbeatAt))) continue;
      let jobs = 0;
      for (const job of running) {
        const counted = await this.store.jobs.lineCounts(job.proposalId);
        const end = { state: 'lost', endedAt, rc: null, signal: null, ...counted, exitReason: 'lost', exitDetail: null };
        const detail = `instance ${i.id} stopped beating while job ${job.proposalId} ran (last heartbeat ${i.heartbeatAt})`;
        if (await publishLost(this.bus, job, end, detail)) jobs++;
      }
      const terminals = await this.store.terminals.endAllOf(i.id, 'exited', endedAt);
      if (jobs > 0 || terminals.length > 0) this.opts.onJudged?.(i.id, jobs, terminals.length);
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
    await this.judging;
  }
}
