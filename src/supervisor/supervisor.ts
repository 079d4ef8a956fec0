/**
 * The generation supervisor (spec: Generation; States and transitions, "Generation job").
 *
 * `start` spawns `<node> <dispatch tool> --project … [--shot …] [--model …] [--dry-run]`
 * from an argument array, without a shell, in its own process group; frames stdout and
 * stderr into line events; and publishes the exit once the process has exited and both
 * pipes are drained, so a job's exit event always follows its last line event.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import type { EventBus } from '../bus/bus.js';
import type { JobRecord, JobsRepo } from '../state/jobs-repo.js';
import type { ProposalsRepo } from '../state/proposals-repo.js';
import { GENERATION_PROPOSAL } from '../registry/index.js';
import { frameLines, type FramedLine } from './frame-lines.js';
import { transition, type JobStatus, type JobTrigger } from './job-state.js';
import { groupAlive, killJobTree, killLeftovers, type KnownTree } from './kill-job.js';
import { bootTimeMs, readProc } from './proc.js';

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
}

/** Pruning runs once per this many finished jobs. */
const PRUNE_EVERY = 50;

/** The dispatch tool file does not exist; no process was started. */
export class ToolMissingError extends Error {
  override name = 'ToolMissingError';
  constructor(readonly file: string) {
    super(`dispatch tool not found: ${file}`);
  }
}

/** The running-jobs cap is reached; no process was started. */
export class JobCapacityError extends Error {
  override name = 'JobCapacityError';
  constructor(
    readonly limit: number,
    /** Suggested wait before retrying, in seconds. */
    readonly retryAfterSeconds: number,
  ) {
    super(`too many running generation jobs (limit ${limit}); retry in ${retryAfterSeconds} s`);
  }
}

/** The operating system refused to start the child. */
export class SpawnError extends Error {
  override name = 'SpawnError';
}

export class UnknownJobError extends Error {
  override name = 'UnknownJobError';
  constructor(readonly proposalId: string) {
    super(`unknown job ${proposalId}`);
  }
}

export class JobNotRunningError extends Error {
  override name = 'JobNotRunningError';
  constructor(readonly job: JobRecord) {
    super(`job ${job.proposalId} is not running (state ${job.state})`);
  }
}

/** Called when a job reached a final state (after its exit event is published). */
export type JobExitListener = (job: JobRecord) => void;

/** Transition listener for logs and metrics. */
export type JobTransitionListener = (job: JobRecord, trigger: JobTrigger['kind']) => void;

class RunningJob {
  status: JobStatus = { state: 'running' };
  stdoutLines = 0;
  stderrLines = 0;
  cancelRequested = false;
  endedAt: string | null = null;
  killTimer: NodeJS.Timeout | undefined;
  /** Processes of the job captured by kill passes (cancel, shutdown). */
  readonly tree: KnownTree = new Map();
  /** The leader's start time in clock ticks since boot (no process of the job is older). */
  readonly startTicks: number | undefined;
  readonly finished: Promise<void>;
  resolveFinished!: () => void;

  constructor(
    readonly proposalId: string,
    readonly projectId: string,
    readonly pid: number,
    readonly argv: readonly string[],
    readonly startedAt: string,
    readonly child: ChildProcess,
  ) {
    this.finished = new Promise((r) => (this.resolveFinished = r));
    this.startTicks = readProc(pid)?.startTime;
  }

  record(): JobRecord {
    const s = this.status;
    return {
      proposalId: this.proposalId,
      projectId: this.projectId,
      pid: this.pid,
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

  constructor(
    private readonly bus: EventBus,
    private readonly jobs: JobsRepo,
    private readonly proposals: ProposalsRepo,
    private readonly options: SupervisorOptions,
  ) {}

  onExit(fn: JobExitListener): void {
    this.exitListeners.push(fn);
  }

  onTransition(fn: JobTransitionListener): void {
    this.transitionListeners.push(fn);
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
    const child = spawn(argv[0] as string, argv.slice(1), {
      detached: true, // its own process group: cancel and shutdown signal the whole group
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...this.options.childEnv, [JOB_ENV]: proposalId },
      shell: false,
    });
    if (child.pid === undefined) {
      child.once('error', () => {}); // reported through the SpawnError below
      child.stdout?.destroy();
      child.stderr?.destroy();
      throw new SpawnError('the operating system refused to start the dispatch tool');
    }
    child.on('error', () => {
      // Errors after a successful spawn (e.g. a kill of a gone process) change nothing: the
      // exit handler below ends the job.
    });

    const job = new RunningJob(proposalId, req.project, child.pid, argv, new Date().toISOString(), child);
    try {
      this.record(job, req);
    } catch (err) {
      killJobTree(job.pid, 'SIGKILL', job.tree, jobMark(proposalId)); // an unrecorded job must not run
      throw err;
    }
    this.running.set(proposalId, job);
    this.startedTotal++;

    const { severity } = transition(null, { kind: 'accepted' });
    this.bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli spawned pid=${job.pid}`,
      payload: { proposal_id: proposalId, argv },
    });
    this.notifyTransition(job, 'accepted');
    this.supervise(job);
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

  private supervise(job: RunningJob): void {
    const { child } = job;
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
      });
    };
    const drained = Promise.all([
      frameLines(child.stdout!, max, onLine('stdout')),
      frameLines(child.stderr!, max, onLine('stderr')),
    ]);
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.once('exit', (code, signal) => resolve({ code, signal })),
    );
    void exited.then(async ({ code, signal }) => {
      // The job is its whole process tree: what outlives the tool ends with it. Members of its
      // group would hold its pipes open; descendants it started elsewhere (daemons, sessions
      // of their own) would run on, unwatched, forever.
      killLeftovers(job.pid, 'SIGKILL', job.tree, jobMark(job.proposalId), job.startTicks);
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
      this.finish(job, exitCode(code, signal), signal);
    });
  }

  private finish(job: RunningJob, rc: number, signal: NodeJS.Signals | null): void {
    clearTimeout(job.killTimer);
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
    this.bus.publish({
      severity,
      scope: GENERATION_SCOPE,
      summary: `dispatch_cli exited rc=${rc}`,
      detail: signal ? `terminated by ${signal}${job.cancelRequested ? ' (cancelled)' : ''}` : null,
      payload: { proposal_id: job.proposalId, rc },
    });
    this.notifyTransition(job, 'exit');
    for (const fn of this.exitListeners) fn(rec);
    job.resolveFinished();
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
      this.terminate(job, this.options.killGraceMs);
    }
    return job.record();
  }

  private terminate(job: RunningJob, graceMs: number): void {
    const mark = jobMark(job.proposalId);
    killJobTree(job.pid, 'SIGTERM', job.tree, mark, job.startTicks);
    clearTimeout(job.killTimer);
    job.killTimer = setTimeout(() => killJobTree(job.pid, 'SIGKILL', job.tree, mark, job.startTicks), graceMs);
    job.killTimer.unref();
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
      this.terminate(job, graceMs);
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
   * every process carrying their {@link JOB_ENV} entry, wherever it went), and each is
   * marked `lost` with a failure event.
   */
  recoverLost(): JobRecord[] {
    const lost: JobRecord[] = [];
    const boot = bootTimeMs();
    for (const rec of this.jobs.running()) {
      const killed = killLostJob(rec, boot);
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
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** rc for the exit event: the code, or 128 + signal number when killed by a signal. */
function exitCode(code: number | null, signal: NodeJS.Signals | null): number {
  if (code !== null) return code;
  const n = signal ? os.constants.signals[signal] : undefined;
  return 128 + (n ?? 0);
}

/**
 * SIGKILLs what is left of a job of a previous run; returns the number of processes killed.
 * Nothing survives a reboot. Processes carrying the job's mark are its own, wherever they
 * are. Its process group and the leader's tree are taken when they are still the job's.
 */
function killLostJob(rec: JobRecord, boot: number | null): number {
  if (boot !== null && Date.parse(rec.startedAt) < boot) return 0;
  const mark = jobMark(rec.proposalId);
  return rec.pid !== null && groupOfJob(rec.pid, rec.argv)
    ? killJobTree(rec.pid, 'SIGKILL', new Map(), mark)
    : killLeftovers(null, 'SIGKILL', new Map(), mark);
}

/**
 * Whether the process group `pid` of a job from a previous run is still the job's, guarding
 * against pid reuse: a live leader must still run the tool we started; and with the leader
 * gone, a live group with its id can only hold the job's own processes (Linux does not hand
 * out a pid that is still some group's id).
 */
function groupOfJob(pid: number, argv: readonly string[]): boolean {
  if (!groupAlive(pid)) return false;
  const leader = readProc(pid);
  if (leader === null || leader.state === 'Z') return true;
  return leader.pgid === pid && isOurCommand(pid, argv);
}

/** True when process `pid` runs the tool file of `argv`. */
function isOurCommand(pid: number, argv: readonly string[]): boolean {
  try {
    const cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    return argv.length > 1 && cmdline.includes(argv[1] as string);
  } catch {
    return false;
  }
}
