/**
 * The generation supervisor (spec: Generation; States and transitions, "Generation job").
 *
 * `start` spawns `<node> <dispatch tool> --project … [--shot …] [--model …] [--dry-run]`
 * as a managed process (src/process: from an argument array, without a shell, in its own
 * process group); frames stdout and stderr into line events; and publishes the exit once the
 * process has exited, what its tree left running was swept, and both pipes are drained, so a
 * job's exit event always follows its last line event.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { EventBus } from '../bus/bus.js';
import type { JobRecord, JobsRepo } from '../state/jobs-repo.js';
import type { ProposalsRepo } from '../state/proposals-repo.js';
import { GENERATION_PROPOSAL } from '../registry/index.js';
import { describeLeftovers, ProcessSpawnError, spawnManaged, sweepTree, type ExitFacts, type ManagedProcess, type ProcTable, type SweepBounds, type SweepReport } from '../process/index.js';
import { frameLines, type FramedLine } from './frame-lines.js';
import { JobCapacityError, JobNotRunningError, SpawnError, ToolMissingError, UnknownJobError } from './errors.js';
import { transition, type JobStatus, type JobTrigger } from './job-state.js';

/** Payload of every line event (spec: Events): one frozen object, so the bus reuses its JSON. */
const LINE_PAYLOAD = Object.freeze({ source: 'dispatch_cli' });

/** Scope of every generation event (spec: Events). */
export const GENERATION_SCOPE = 'engine/generation';

/**
 * Environment variable set to the proposal id in every job's environment. Its descendants
 * inherit it, so every process of the job can be found in /proc and killed, also those that
 * left its process group and lost their parent, and also after the service itself died.
 */
export const JOB_ENV = 'CONSOLE_JOB_ID';

/** The environment entry that marks the processes of job `proposalId`. */
const jobMark = (proposalId: string): string => `${JOB_ENV}=${proposalId}`;

/** What the dispatch tool is asked to do; episode and modality are never forwarded. */
export interface GenerationRequest {
  readonly project: string;
  readonly shotId: string | null;
  readonly model: string | null;
  readonly dryRun: boolean;
  readonly episode: number | null;
  readonly modality: string;
}

export interface SupervisorOptions {
  readonly dispatchCli: string;
  readonly childEnv: Readonly<Record<string, string>>;
  readonly maxRunning: number;
  readonly retryAfterSeconds: number;
  readonly killGraceMs: number;
  readonly lineMaxBytes: number;
  /** Finished jobs kept in the state database; older ones are pruned. */
  readonly historySize: number;
  /** Bounds of the sweep of what a job's tree left running after its exit (and at recovery). */
  readonly sweep: SweepBounds;
}

/** Pruning runs once per this many finished jobs. */
const PRUNE_EVERY = 50;

/** Called when a job reached a final state (after its exit event is published). */
export type JobExitListener = (job: JobRecord) => void;

/** Transition listener for logs and metrics. */
export type JobTransitionListener = (job: JobRecord, trigger: JobTrigger['kind']) => void;

/**
 * Called, before the exit is published, when the sweep after a job's exit killed processes its
 * tree left running (`killed` > 0), or could not end them all within its bounds (`left`).
 */
export type JobLeftoversListener = (job: JobRecord, leftovers: SweepReport) => void;

class RunningJob {
  status: JobStatus = { state: 'running' };
  stdoutLines = 0;
  stderrLines = 0;
  cancelRequested = false;
  endedAt: string | null = null;
  /** Resolves once the exit is published (set when supervision starts). */
  finished: Promise<void> = Promise.resolve();

  constructor(
    readonly proposalId: string,
    readonly projectId: string,
    readonly argv: readonly string[],
    readonly startedAt: string,
    readonly proc: ManagedProcess,
  ) {}

  record(): JobRecord {
    const s = this.status;
    return {
      proposalId: this.proposalId,
      projectId: this.projectId,
      pid: this.proc.pid,
      argv: this.argv,
      state: s.state,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      rc: s.state === 'exited ok' || s.state === 'exited failed' ? s.rc : null,
      signal: s.state === 'exited ok' || s.state === 'exited failed' ? s.signal : null,
      stdoutLines: this.stdoutLines,
      stderrLines: this.stderrLines,
      cancelRequested: this.cancelRequested,
    };
  }
}

export class Supervisor {
  private readonly running = new Map<string, RunningJob>();
  private readonly exitListeners: JobExitListener[] = [];
  private readonly transitionListeners: JobTransitionListener[] = [];
  private readonly leftoversListeners: JobLeftoversListener[] = [];
  private stopping = false;
  private startedTotal = 0;
  private finishedTotal = 0;
  /**
   * Final states the state database could not store when the job ended (disk full…), by
   * proposal id: served from here and stored by a retry every second, so an exit never throws
   * out of the exit handler (it crashed the service) and is never forgotten while it runs.
   */
  private readonly unsaved = new Map<string, { rec: JobRecord; fin: Parameters<JobsRepo['finish']>[1] }>();
  private saveRetry: NodeJS.Timeout | undefined;

  /** @param procs the process worker that scans and signals the jobs' trees. */
  constructor(
    private readonly bus: EventBus,
    private readonly jobs: JobsRepo,
    private readonly proposals: ProposalsRepo,
    private readonly procs: ProcTable,
    private readonly options: SupervisorOptions,
  ) {}

  onExit(fn: JobExitListener): void {
    this.exitListeners.push(fn);
  }

  onTransition(fn: JobTransitionListener): void {
    this.transitionListeners.push(fn);
  }

  onLeftovers(fn: JobLeftoversListener): void {
    this.leftoversListeners.push(fn);
  }

  /** Number of jobs currently running. */
  get runningCount(): number {
    return this.running.size;
  }

  /** Jobs started since the service started. */
  get startedCount(): number {
    return this.startedTotal;
  }

  /** The argument list given to the dispatch tool (spec: Generation, rule 1), without the interpreter. */
  static toolArgs(req: GenerationRequest): string[] {
    const args = ['--project', req.project];
    if (req.shotId) args.push('--shot', req.shotId);
    if (req.model) args.push('--model', req.model);
    if (req.dryRun) args.push('--dry-run');
    return args;
  }

  /**
   * Starts one generation job: records it (and its `gen_` id as a pending
   * GenerationProposal), spawns the tool and publishes the spawn event.
   * @throws ToolMissingError when the tool file does not exist; JobCapacityError at the cap;
   *   SpawnError when the OS refuses the process. In all three cases nothing was started.
   */
  start(req: GenerationRequest): JobRecord {
    const tool = this.options.dispatchCli;
    if (!isFile(tool)) throw new ToolMissingError(tool);
    if (this.stopping || this.running.size >= this.options.maxRunning) throw new JobCapacityError(this.options.maxRunning, this.options.retryAfterSeconds);

    const proposalId = `gen_${randomBytes(6).toString('hex')}`;
    const argv = [process.execPath, tool, ...Supervisor.toolArgs(req)];
    let proc: ManagedProcess;
    try {
      proc = spawnManaged(this.procs, argv[0] as string, argv.slice(1), {
        env: { ...this.options.childEnv, [JOB_ENV]: proposalId },
        stdout: 'pipe',
        stderr: 'pipe',
        mark: jobMark(proposalId),
        sweep: this.options.sweep,
      });
    } catch (err) {
      if (err instanceof ProcessSpawnError) throw new SpawnError('the operating system refused to start the dispatch tool', { cause: err });
      throw err;
    }

    const job = new RunningJob(proposalId, req.project, argv, new Date().toISOString(), proc);
    try {
      this.record(job, req);
    } catch (err) {
      void proc.signalTree('SIGKILL'); // an unrecorded job must not run
      throw err;
    }
    this.running.set(proposalId, job);
    this.startedTotal++;

    const { severity } = transition(null, { kind: 'accepted' });
    this.bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli spawned pid=${job.proc.pid}`,
      payload: { proposal_id: proposalId, argv },
    });
    this.notifyTransition(job, 'accepted');
    job.finished = this.supervise(job);
    return job.record();
  }

  /** Stores the job and its pending GenerationProposal in one transaction. */
  private record(job: RunningJob, req: GenerationRequest): void {
    this.proposals.transaction(() => {
      this.jobs.insert({ ...job.record(), state: 'running' });
      this.proposals.insertPending({
        id: job.proposalId,
        kind: GENERATION_PROPOSAL,
        title: `Generate ${req.project}${req.shotId ? `/${req.shotId}` : ''}`,
        payload: {
          project: req.project,
          shot_id: req.shotId,
          model: req.model,
          dry_run: req.dryRun,
          episode: req.episode,
          modality: req.modality,
        },
        createdAt: job.startedAt,
      });
    });
  }

  /** Publishes the job's lines, then its exit; resolves once the exit is published. */
  private supervise(job: RunningJob): Promise<void> {
    const { child } = job.proc;
    const max = this.options.lineMaxBytes;
    const onLine = (source: 'stdout' | 'stderr') => (line: FramedLine) => {
      if (source === 'stdout') job.stdoutLines++;
      else job.stderrLines++;
      const { severity } = transition(job.status, { kind: source === 'stdout' ? 'stdout-line' : 'stderr-line' });
      this.bus.publish({
        severity,
        scope: GENERATION_SCOPE,
        summary: line.text,
        detail: `${job.proposalId} ${source} line ${line.number}${line.cut ? ` (cut at ${max} bytes)` : ''}`,
        payload: LINE_PAYLOAD,
        // The payload is fixed by the spec: the job is named for the proposalId filter (not served).
        proposalId: job.proposalId,
      });
    };
    const drained = Promise.all([
      frameLines(child.stdout!, max, onLine('stdout')),
      frameLines(child.stderr!, max, onLine('stderr')),
    ]);
    // The job is its whole process tree: what outlives the tool ends with it (the managed
    // process sweeps it after the exit, until none is left). Members of its group would hold
    // its pipes open; descendants it started elsewhere (daemons, sessions of their own) would
    // run on, unwatched, forever.
    return job.proc.ended.then(async ({ exit, leftovers }) => {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        drained,
        new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            // A descendant that left the group still holds a pipe: stop reading it.
            child.stdout?.destroy();
            child.stderr?.destroy();
            resolve();
          }, Math.max(this.options.killGraceMs, 1000));
        }),
      ]);
      clearTimeout(timer);
      await drained;
      this.finish(job, exit, leftovers);
    });
  }

  private finish(job: RunningJob, { rc, signal }: ExitFacts, leftovers: SweepReport): void {
    const { next, severity } = transition(job.status, { kind: 'exit', rc, signal });
    job.status = next;
    job.endedAt = new Date().toISOString();
    const rec = job.record();
    this.saveFinish(job.proposalId, rec, {
      state: rec.state,
      endedAt: job.endedAt,
      rc,
      signal,
      stdoutLines: job.stdoutLines,
      stderrLines: job.stderrLines,
    });
    this.running.delete(job.proposalId);
    if (++this.finishedTotal % PRUNE_EVERY === 0) {
      try {
        this.jobs.prune(this.options.historySize);
      } catch {
        // The next prune catches up.
      }
    }
    this.reportLeftovers(job, rec, leftovers);
    this.bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli exited rc=${rc}`,
      detail: signal ? `terminated by ${signal}${job.cancelRequested ? ' (cancelled)' : ''}` : null,
      payload: { proposal_id: job.proposalId, rc },
    });
    this.notifyTransition(job, 'exit');
    for (const fn of this.exitListeners) fn(rec);
  }

  /**
   * Tells the listeners what the sweep after the exit killed; processes it could not end within
   * its bounds also get a warning event, published before the exit event (issue 10, item 5).
   */
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
    });
  }

  /** Stores a job's final state, or keeps it for the retry when the database refuses it. */
  private saveFinish(proposalId: string, rec: JobRecord, fin: Parameters<JobsRepo['finish']>[1]): void {
    try {
      this.jobs.finish(proposalId, fin);
    } catch {
      this.unsaved.set(proposalId, { rec, fin });
      this.scheduleSaveRetry();
    }
  }

  /** Stores the kept final states; what still fails waits for the next try. */
  private retryUnsaved(): void {
    for (const [id, { fin }] of this.unsaved) {
      try {
        this.jobs.finish(id, fin);
        this.unsaved.delete(id);
      } catch {
        break; // the database still refuses: all of them wait
      }
    }
    if (this.unsaved.size > 0) this.scheduleSaveRetry();
  }

  private scheduleSaveRetry(): void {
    if (this.saveRetry !== undefined) return;
    this.saveRetry = setTimeout(() => {
      this.saveRetry = undefined;
      this.retryUnsaved();
    }, 1000);
    this.saveRetry.unref();
  }

  private notifyTransition(job: RunningJob, trigger: JobTrigger['kind']): void {
    if (this.transitionListeners.length === 0) return;
    const rec = job.record();
    for (const fn of this.transitionListeners) fn(rec, trigger);
  }

  /** A job by proposal id: live figures while running, else the stored record. */
  get(proposalId: string): JobRecord | undefined {
    return this.running.get(proposalId)?.record() ?? this.unsaved.get(proposalId)?.rec ?? this.jobs.get(proposalId);
  }

  /** Jobs newest first, running ones with live line counts. */
  list(limit: number, state?: string): JobRecord[] {
    return this.jobs.list(limit, state).map((r) => this.running.get(r.proposalId)?.record() ?? this.unsaved.get(r.proposalId)?.rec ?? r);
  }

  /** Jobs by state over the whole history in the state database. */
  countsByState(): Record<string, number> {
    return this.jobs.countsByState();
  }

  /** Running jobs with live figures. */
  runningJobs(): JobRecord[] {
    return [...this.running.values()].map((j) => j.record());
  }

  /**
   * Cancels a running job: SIGTERM to its process tree, SIGKILL after the grace period.
   * The exit is published as usual (a failure with rc 128 + signal number).
   * @throws UnknownJobError, JobNotRunningError.
   */
  cancel(proposalId: string): JobRecord {
    const job = this.running.get(proposalId);
    if (!job) {
      const stored = this.jobs.get(proposalId);
      if (!stored) throw new UnknownJobError(proposalId);
      throw new JobNotRunningError(stored);
    }
    if (!job.cancelRequested) {
      job.cancelRequested = true;
      try {
        this.jobs.markCancelRequested(proposalId);
      } catch {
        // The database refuses writes (disk full): the job is stopped all the same.
      }
      job.proc.stop(this.options.killGraceMs);
    }
    return job.record();
  }

  /**
   * Shutdown: refuses new jobs, terminates every running job's process tree (SIGKILL after
   * `graceMs`) and resolves once every exit has been published.
   */
  async stopAll(graceMs: number = this.options.killGraceMs): Promise<void> {
    this.stopping = true;
    const jobs = [...this.running.values()];
    for (const job of jobs) {
      job.cancelRequested = true;
      job.proc.stop(graceMs);
    }
    await Promise.all(jobs.map((j) => j.finished));
    // A last try for final states the database refused; those it still refuses stay `running`
    // in it, and the next start marks them lost.
    clearTimeout(this.saveRetry);
    this.saveRetry = undefined;
    if (this.unsaved.size > 0) this.retryUnsaved();
    clearTimeout(this.saveRetry);
    this.saveRetry = undefined;
  }

  /**
   * Start-up recovery: jobs the database still records as running belong to a previous run
   * that died. Every process left of them is killed (their process groups, their trees, and
   * every process carrying their {@link JOB_ENV} entry, wherever it went, swept until none is
   * left), and each is marked `lost` with a failure event.
   */
  async recoverLost(): Promise<JobRecord[]> {
    const lost: JobRecord[] = [];
    const boot = await this.procs.bootTimeMs();
    for (const rec of this.jobs.running()) {
      const killed = await this.killLostJob(rec, boot);
      const endedAt = new Date().toISOString();
      const { next, severity } = transition({ state: 'running' }, { kind: 'lost' });
      this.jobs.finish(rec.proposalId, {
        state: next.state,
        endedAt,
        rc: null,
        signal: null,
        stdoutLines: rec.stdoutLines,
        stderrLines: rec.stderrLines,
      });
      this.bus.publish({
        severity,
        scope: GENERATION_SCOPE,
        summary: `dispatch_cli lost pid=${rec.pid ?? 'unknown'}`,
        detail: `the service stopped while job ${rec.proposalId} ran${killed > 0 ? `; ${killed} of its processes were killed` : ''}`,
        payload: { proposal_id: rec.proposalId, pid: rec.pid },
      });
      lost.push({ ...rec, state: next.state, endedAt });
    }
    return lost;
  }

  /**
   * SIGKILLs what is left of a job of a previous run; returns the number of processes killed.
   * Nothing survives a reboot. Processes carrying the job's mark are its own, wherever they
   * are. Its process group and the leader's tree are taken when they are still the job's.
   */
  private async killLostJob(rec: JobRecord, boot: number | null): Promise<number> {
    if (boot !== null && Date.parse(rec.startedAt) < boot) return 0;
    const leader = rec.pid !== null && (await this.groupOfJob(rec.pid, rec.argv)) ? rec.pid : null;
    const swept = await sweepTree(this.procs, { root: leader, pgid: leader, mark: jobMark(rec.proposalId), known: [] }, this.options.sweep);
    return swept.killed;
  }

  /**
   * Whether the process group `pid` of a job from a previous run is still the job's, guarding
   * against pid reuse: a live leader must still run the tool we started; and with the leader
   * gone, a live group with its id can only hold the job's own processes (Linux does not hand
   * out a pid that is still some group's id).
   */
  private async groupOfJob(pid: number, argv: readonly string[]): Promise<boolean> {
    if (!groupAlive(pid)) return false;
    const { info, cmdline } = await this.procs.describe(pid);
    if (info === null || info.state === 'Z') return true;
    return info.pgid === pid && argv.length > 1 && cmdline !== null && cmdline.includes(argv[1] as string);
  }
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** True while a group led by `pgid` exists that we may signal (a signal 0 to it succeeds). */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false; // ESRCH: none; EPERM: another user's, never one of our jobs
  }
}
