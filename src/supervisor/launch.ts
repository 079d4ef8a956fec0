/** Launching a generation job (service-spec.md §Generation): the tool's argv, its spawn as a managed process, and its record. */
import fs from 'node:fs';
import type { JobStart } from '../bus/event.js';
import { GENERATION_PROPOSAL } from '../registry/index.js';
import type { StateCommitter, StateStore } from '../state/state-store.js';
import { ManagedProcess, ProcessSpawnError, type HousekeepingThread, type SweepBounds } from '../process/index.js';
import type { JobIo, RemoteJob } from './job-io.js';
import { SpawnError, ToolMissingError } from './errors.js';
import { GENERATION_SCOPE, JOB_ENV, jobMark, RunningJob } from './running-job.js';

/** What the dispatch tool is asked to do; episode and modality are never forwarded. */
export interface GenerationRequest {
  readonly project: string;
  readonly shotId: string | null;
  readonly model: string | null;
  readonly dryRun: boolean;
  readonly episode: number | null;
  readonly modality: string;
}

/** The argument list given to the dispatch tool (spec: Generation, rule 1), without the interpreter. */
export function toolArgs(req: GenerationRequest): string[] {
  const args = ['--project', req.project];
  if (req.shotId) args.push('--shot', req.shotId);
  if (req.model) args.push('--model', req.model);
  if (req.dryRun) args.push('--dry-run');
  return args;
}

/** What {@link spawnTool} needs: the tool, the children's environment, the bound on a line, the sweep bounds. */
export interface LaunchOptions {
  readonly dispatchCli: string;
  readonly lineMaxBytes: number;
  readonly childEnv: Readonly<Record<string, string>>;
  readonly sweep: SweepBounds;
  /** CONSOLE_JOB_NICE: set on the job by the spawn helper right after its exec (job-priority.ts counts it). */
  readonly nice?: number;
}

/** Checks the dispatch tool is a file before anything starts. @throws ToolMissingError naming the file. */
export function requireTool(tool: string): void {
  if (!isFile(tool)) throw new ToolMissingError(tool);
}

/**
 * Spawns the dispatch tool for job `proposalId` through the job I/O thread (forked by its spawn
 * helper process, stdout and stderr read on the thread). @returns the full argv, the process (its
 * signals and sweep from here) and the thread's handle of its output. @throws SpawnError when the OS refuses.
 */
export async function spawnTool(
  io: JobIo,
  procs: HousekeepingThread,
  options: LaunchOptions,
  proposalId: string,
  req: GenerationRequest,
): Promise<{ argv: string[]; proc: ManagedProcess; output: RemoteJob }> {
  const tool = options.dispatchCli;
  const argv = [process.execPath, tool, ...toolArgs(req)];
  try {
    const env = { ...options.childEnv, [JOB_ENV]: proposalId };
    const output = await io.spawn({ file: argv[0] as string, args: argv.slice(1), env, nice: options.nice, lineMaxBytes: options.lineMaxBytes, proposalId });
    const proc = new ManagedProcess(
      procs,
      { pid: output.pid, startTime: output.startTime, stdout: null, stderr: null, exit: output.exit },
      {
        env,
        stdout: 'pipe',
        stderr: 'pipe',
        mark: jobMark(proposalId),
        sweep: options.sweep,
      },
    );
    return { argv, proc, output };
  } catch (err) {
    if (!(err instanceof ProcessSpawnError)) throw err;
    throw new SpawnError('the operating system refused to start the dispatch tool', { cause: err });
  }
}

/** A refused spawn is recorded as a job failed at once: no pid, `spawn failed`, the errno as detail; no event (nothing ran). */
export function recordRefused(state: StateStore, instanceId: string, proposalId: string, req: GenerationRequest, argv: readonly string[], refused: SpawnError): void {
  void refused.settled
    .then(async () => {
      const at = new Date().toISOString();
      await state.transaction(async (tx) => {
        await tx.jobs.insert({ proposalId, projectId: req.project, pid: null, argv, state: 'exited failed', startedAt: at, instanceId });
        await tx.jobs.finish(proposalId, { state: 'exited failed', endedAt: at, rc: null, signal: null, stdoutLines: 0, stderrLines: 0, exitReason: 'spawn failed', exitDetail: refused.message });
      });
    })
    .catch(() => {});
}

/** The job's start as it commits with its spawn event (StateCommitter.launch): the job running, its pending GenerationProposal. */
export function jobStart(instanceId: string, job: RunningJob, req: GenerationRequest): JobStart {
  const { proposalId, projectId, pid, argv, startedAt } = job.record();
  return {
    job: { proposalId, projectId, pid, argv, startedAt, instanceId },
    proposal: {
      id: proposalId,
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
      createdAt: startedAt,
    },
  };
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** What {@link launchJob} needs of the supervisor. */
export interface LaunchParts {
  readonly io: JobIo;
  readonly procs: HousekeepingThread;
  readonly committer: StateCommitter;
  readonly options: LaunchOptions & { readonly instanceId: string };
}

/** Spawns and records one job, or neither (a refused spawn is recorded failed). @throws SpawnError or the state store's error. */
export async function launchJob(parts: LaunchParts, proposalId: string, req: GenerationRequest): Promise<RunningJob> {
  const { options } = parts;
  let launched: Awaited<ReturnType<typeof spawnTool>>;
  try {
    launched = await spawnTool(parts.io, parts.procs, options, proposalId, req);
  } catch (err) {
    if (err instanceof SpawnError) recordRefused(parts.committer.store, options.instanceId, proposalId, req, [process.execPath, options.dispatchCli, ...toolArgs(req)], err);
    throw err;
  }
  const { argv, proc, output } = launched;
  const job = new RunningJob(proposalId, req.project, argv, new Date().toISOString(), proc, output);
  // The job's record and its spawn event commit together: no job without its first event; its machine accepted it on the thread.
  const spawned = { severity: output.accepted, scope: GENERATION_SCOPE, summary: `dispatch_cli spawned pid=${proc.pid}`, payload: { proposal_id: proposalId, argv } };
  try {
    await parts.committer.launch(jobStart(options.instanceId, job, req), spawned);
  } catch (err) {
    void proc.signalTree('SIGKILL'); // an unrecorded job must not run
    // Nobody will read it: its pipes are closed, not held open on the thread.
    output.discard();
    throw err;
  }
  return job;
}
