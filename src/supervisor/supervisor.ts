/**
 * The generation supervisor (service-spec.md §Generation, §States and transitions): the main thread's
 * client of the job I/O thread, where each job is spawned, read and run through its state machine
 * (job-state.ts JobMachine), its spawn orders paced (spawn-pacer.ts). Here: the cap (a 429 needs no round
 * trip to the thread), the job's record and events, and a mirror of
 * its state for reads. A job's exit is published once the process exited, its tree was swept and both
 * pipes drained, after its last line, with the outcome its machine decided.
 */
import { randomBytes } from 'node:crypto';
import type { Bus } from '../bus/bus.js';
import type { JobRecord } from '../state/records.js';
import type { JobQuery, StateCommitter, StateStore } from '../state/state-store.js';
import { describeLeftovers, type HousekeepingThread, type SpawnHelperStats, type SweepBounds, type SweepReport } from '../process/index.js';
import type { JobIo, JobIoThreadStats } from './job-io.js';
import { JobCapacityError, JobNotRunningError, UnknownJobError } from './errors.js';
import { JobPriority } from './job-priority.js';
import { OutputGate } from './output-gate.js';
import { superviseOutput } from './job-output.js';
import type { JobOutcome, JobTrigger } from './job-state.js';
import { launchJob, requireTool, type GenerationRequest } from './launch.js';
import { recoverLostJobs } from './lost-jobs.js';
import { JobReads, withoutOwner } from './job-reads.js';
import { GENERATION_SCOPE, type RunningJob } from './running-job.js';

export { GENERATION_SCOPE, JOB_ENV } from './running-job.js';
export type { GenerationRequest } from './launch.js';

export interface SupervisorOptions {
  readonly dispatchCli: string;
  readonly childEnv: Readonly<Record<string, string>>;
  readonly maxRunning: number;
  /** The instance the jobs run on (cluster.md §Jobs). */
  readonly instanceId: string;
  /** Cluster mode: records served with their `instanceId`. */
  readonly reportInstance?: boolean;
  readonly retryAfterSeconds: number;
  readonly killGraceMs: number;
  readonly lineMaxBytes: number;
  /** Finished jobs kept in the state database; older ones are pruned. */
  readonly historySize: number;
  /** Bounds of the sweep of what a job's tree left running after its exit (and at recovery). */
  readonly sweep: SweepBounds;
  /** CONSOLE_JOB_NICE: the jobs' CPU priority below the service's (0..19). */
  readonly nice?: number;
  /** CONSOLE_EVENT_BACKLOG_MAX: unstored events at which job output is held. */
  readonly backlogMax?: number;
}

const PRUNE_EVERY = 50;

/** Called when a job reached a final state (after its exit event is published). */
export type JobExitListener = (job: JobRecord) => void;

/** Transition listener for logs and metrics. */
export type JobTransitionListener = (job: JobRecord, trigger: JobTrigger['kind']) => void;

/** Called before the exit is published when the post-exit sweep killed leftovers or could not end them all. */
export type JobLeftoversListener = (job: JobRecord, leftovers: SweepReport) => void;

/** Called when a job was fenced: marked lost by another instance, its tree killed here. */
export type JobFencedListener = (job: JobRecord) => void;

export class Supervisor {
  private readonly running = new Map<string, RunningJob>();
  private readonly exitListeners: JobExitListener[] = [];
  private readonly transitionListeners: JobTransitionListener[] = [];
  private readonly leftoversListeners: JobLeftoversListener[] = [];
  private readonly fencedListeners: JobFencedListener[] = [];
  /** Ended jobs whose final state the bus has not stored yet: served from here. */
  private readonly ending = new Map<string, JobRecord>();
  private readonly state: StateStore;
  /** Lowers each job's CPU priority below the service's. */
  readonly priority: JobPriority;
  /** Holds every job's output while the bus is behind (backpressure). */
  readonly gate: OutputGate;
  private stopping = false;
  /** Jobs being recorded: they count against the cap, and shutdown waits for them. */
  private readonly starting = new Set<Promise<void>>();
  private startedTotal = 0;
  private finishedTotal = 0;
  private readonly reads: JobReads;

  /**
   * @param committer records a job with its spawn event in one transaction; @param procs the
   * process worker; @param io the job I/O thread: it forks the jobs (through the spawn helper
   * process) and reads their output.
   */
  constructor(
    private readonly bus: Bus,
    private readonly committer: StateCommitter,
    private readonly procs: HousekeepingThread,
    private readonly io: JobIo,
    private readonly options: SupervisorOptions,
  ) {
    this.state = committer.store;
    this.reads = new JobReads(this.running, this.ending, this.state.jobs, options.instanceId, options.reportInstance ?? false);
    this.priority = new JobPriority(procs, options.nice ?? 0);
    this.gate = new OutputGate(() => bus.backlog, options.backlogMax ?? Infinity);
    io.holdWith(this.gate);
    bus.onFenced((proposalId) => this.fence(proposalId));
  }

  onExit(fn: JobExitListener): void {
    this.exitListeners.push(fn);
  }

  onTransition(fn: JobTransitionListener): void {
    this.transitionListeners.push(fn);
  }

  onLeftovers(fn: JobLeftoversListener): void {
    this.leftoversListeners.push(fn);
  }

  onFenced(fn: JobFencedListener): void {
    this.fencedListeners.push(fn);
  }

  /** Number of jobs currently running. */
  get runningCount(): number {
    return this.running.size;
  }

  /** The spawn helper process's pid and counts (`jobs.spawner` of the system status). */
  spawnerStats(): SpawnHelperStats {
    return this.io.stats();
  }

  /** The job I/O thread's id, nice value and line figures (`jobs.thread` of the system status). */
  ioThreadStats(): JobIoThreadStats {
    return this.io.threadStats();
  }

  /** Jobs started since the service started. */
  get startedCount(): number {
    return this.startedTotal;
  }

  /** @throws JobCapacityError at the cap (jobs being recorded count) or while stopping. */
  private checkCapacity(): void {
    if (this.stopping || this.running.size + this.starting.size >= this.options.maxRunning) throw new JobCapacityError(this.options.maxRunning, this.options.retryAfterSeconds);
  }

  /**
   * Starts one generation job, recorded with its pending GenerationProposal and spawn event.
   * @throws ToolMissingError, JobCapacityError, SpawnError, or the state store's error: nothing then runs.
   */
  async start(req: GenerationRequest): Promise<JobRecord> {
    requireTool(this.options.dispatchCli);
    this.checkCapacity();

    const proposalId = `gen_${randomBytes(6).toString('hex')}`;
    // Counted against the cap from here: the spawn (on the job I/O thread) and the record take turns of the loop.
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    this.starting.add(settled);
    let job: RunningJob;
    try {
      job = await launchJob({ io: this.io, procs: this.procs, committer: this.committer, options: this.options }, proposalId, req);
    } finally {
      this.starting.delete(settled);
      settle();
    }
    const { proc } = job;
    this.running.set(proposalId, job);
    this.priority.lower(proc.pid, () => this.running.has(proposalId), job.output.lowered);
    this.startedTotal++;
    this.notifyTransition(job, 'accepted');
    job.finished = superviseOutput(this.bus, this.gate, job, this.options).then(({ end, leftovers }) => this.finish(job, end, leftovers));
    return job.record();
  }

  /** Publishes the end its machine decided (job-state.ts JobMachine, on the job I/O thread) and mirrors it. */
  private finish(job: RunningJob, decided: JobOutcome, leftovers: SweepReport): void {
    const id = job.proposalId;
    this.running.delete(id);
    if (job.fenced) return;
    const end = job.ended(decided);
    const { severity } = decided;
    const { rc, signal } = decided.status;
    const rec = job.record();
    this.ending.set(id, rec);
    if (++this.finishedTotal % PRUNE_EVERY === 0) {
      // A refused prune is caught up by the next one.
      this.state.jobs.prune(this.options.historySize).catch(() => {});
    }
    this.reportLeftovers(job, rec, leftovers);
    // The final state commits with the exit event, after every line, held while the database
    // refuses; dropped if another instance marked the job lost meanwhile.
    this.bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli exited rc=${rc}`,
      detail: signal ? `terminated by ${signal}${decided.exitReason !== 'exited' ? ` (${decided.exitReason})` : ''}` : null,
      payload: { proposal_id: id, rc },
      guard: { job: id, end, settled: () => this.ending.delete(id) },
    });
    this.notifyTransition(job, 'exit');
    for (const fn of this.exitListeners) fn(rec);
  }

  /** Fences a job another instance marked lost: its tree is killed now, nothing more published; the judge's record stays. */
  private fence(proposalId: string): void {
    const job = this.running.get(proposalId);
    if (!job || job.fenced) return;
    job.fenced = true;
    job.askStop('shutdown');
    void job.proc.signalTree('SIGKILL');
    const rec = job.record();
    for (const fn of this.fencedListeners) fn(rec);
  }

  /** Cluster mode, judged dead: fences each running job the database no longer records running. @returns how many. @throws the state store's error. */
  async fenceJudged(): Promise<number> {
    let n = 0;
    for (const job of [...this.running.values()]) {
      if (job.fenced) continue;
      const stored = await this.state.jobs.get(job.proposalId);
      if (stored !== undefined && stored.state === 'running') continue;
      this.fence(job.proposalId);
      n++;
    }
    return n;
  }

  /** Tells the listeners what the post-exit sweep killed; survivors also get a warning event, before the exit event. */
  private reportLeftovers(job: RunningJob, rec: JobRecord, leftovers: SweepReport): void {
    if (leftovers.killed === 0 && leftovers.left.length === 0) return;
    for (const fn of this.leftoversListeners) fn(rec, leftovers);
    const n = leftovers.left.length;
    if (n === 0) return;
    this.bus.publish({
      severity: 'warning',
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli leftovers survived: ${n}`,
      detail: describeLeftovers(leftovers),
      payload: { proposal_id: job.proposalId, left: n, passes: leftovers.passes },
      guard: job.guard,
    });
  }

  private notifyTransition(job: RunningJob, trigger: JobTrigger['kind']): void {
    if (this.transitionListeners.length === 0) return;
    const rec = job.record();
    for (const fn of this.transitionListeners) fn(rec, trigger);
  }

  /** A job by proposal id: live figures while running, else the stored record. */
  get(proposalId: string): Promise<JobRecord | undefined> {
    return this.reads.get(proposalId);
  }

  /** Jobs newest first, running ones with live line counts. */
  list(limit: number, state?: string): Promise<JobRecord[]> {
    return this.reads.list(limit, state);
  }

  /** The jobs matching `q` (filters, a page), newest first, running ones with live line counts. */
  search(q: JobQuery): Promise<JobRecord[]> {
    return this.reads.search(q);
  }

  /** Jobs by state in the state database; those whose final state waits in the bus counted in it from here (no wait for the lines stored before it). */
  async countsByState(): Promise<Record<string, number>> {
    // Taken before the read: a job stored meanwhile is left out of the database's counts and counted here once.
    const ending = [...this.ending.values()];
    const counts = await this.state.jobs.countsByState(ending.map((j) => j.proposalId));
    for (const j of ending) counts[j.state] = (counts[j.state] ?? 0) + 1;
    return counts;
  }

  /** Running jobs with live figures. */
  runningJobs(): JobRecord[] {
    return this.reads.runningJobs();
  }

  /** Whether the job runs on this instance now. */
  runsHere(proposalId: string): boolean {
    return this.running.has(proposalId);
  }

  /** Cancels a running job: SIGTERM to its tree, SIGKILL after the grace; its exit is a failure, rc 128 + signal. @throws UnknownJobError, JobNotRunningError. */
  async cancel(proposalId: string): Promise<JobRecord> {
    const job = this.running.get(proposalId);
    if (!job) {
      const stored = this.ending.get(proposalId) ?? (await this.state.jobs.get(proposalId));
      if (!stored) throw new UnknownJobError(proposalId);
      throw new JobNotRunningError(withoutOwner(stored));
    }
    if (!job.cancelRequested) {
      job.cancelRequested = true;
      job.askStop('cancelled');
      // The database refuses writes (disk full): the job is stopped all the same.
      this.state.jobs.markCancelRequested(proposalId).catch(() => {});
      job.proc.stop(this.options.killGraceMs);
    }
    return job.record();
  }

  /** Shutdown: refuses new jobs, stops every job's tree (SIGKILL after `graceMs`); resolves once every exit is published. */
  async stopAll(graceMs: number = this.options.killGraceMs): Promise<void> {
    this.stopping = true;
    this.gate.stop();
    // Jobs whose record is being written are running too once it is.
    await Promise.all(this.starting);
    const jobs = [...this.running.values()];
    for (const job of jobs) {
      job.askStop('shutdown'); // not a cancel: `cancelRequested` stays as the client left it
      job.proc.stop(graceMs);
    }
    // Their exit events, with the final states, are stored by the bus's close: those the
    // database still refuses then stay `running` in it, and the next start marks them lost.
    await Promise.all(jobs.map((j) => j.finished));
  }

  /**
   * Start-up recovery (lost-jobs.ts): the processes of jobs a previous run left `running` are killed
   * and the jobs marked `lost`; in cluster mode also those since `lostSince` another instance marked.
   */
  recoverLost(lostSince: string | null = null): Promise<JobRecord[]> {
    return recoverLostJobs(this.state.jobs, this.options.instanceId, this.bus, this.procs, this.options.sweep, lostSince);
  }

  /** Jobs whose final state waits in the bus with their exit event (the database refuses it now). */
  get unsavedFinalStates(): number {
    return this.ending.size;
  }
}
