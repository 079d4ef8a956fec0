/** One managed child (jobs, terminals): no shell, its own process group, SIGTERM then SIGKILL after a grace, its tree swept after exit. */
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable } from 'node:stream';
import { ProcessSpawnError } from './errors.js';
import { exitFactsOf, type ExitFacts } from './exit-facts.js';
import type { ProcInfo } from './proc-task.js';
import type { HousekeepingThread } from './housekeeping-thread.js';
import type { RemoteChild, SpawnHelper } from './spawn-helper.js';
import { sweepTree, type SweepBounds, type SweepReport } from './sweep-tree.js';

/** How to start a managed process. */
export interface ManagedSpawnOptions {
  /** Working directory; the service's own when absent. */
  readonly cwd?: string;
  /** Its whole environment, `mark` included. */
  readonly env: Readonly<Record<string, string>>;
  /** stdout and stderr: a pipe to read, or ignored; stdin is always ignored. */
  readonly stdout: 'pipe' | 'ignore';
  readonly stderr: 'pipe' | 'ignore';
  /** The environment entry `NAME=value` that marks every process of its tree. */
  readonly mark: string;
  /** Bounds of the leftover sweep after it exited. */
  readonly sweep: SweepBounds;
}

/** How a managed process ended: its exit, then the sweep of what its tree left running. */
export interface ProcessEnd {
  readonly exit: ExitFacts;
  readonly leftovers: SweepReport;
}

/** Starts `file` with `args` as a new process-group (and session) leader. @throws ProcessSpawnError when the OS refuses it. */
export function spawnManaged(table: HousekeepingThread, file: string, args: readonly string[], opts: ManagedSpawnOptions): ManagedProcess {
  let child: ChildProcess;
  try {
    child = spawn(file, args, {
      cwd: opts.cwd,
      detached: true, // its own process group: a signal to the group reaches every member
      stdio: ['ignore', opts.stdout, opts.stderr],
      env: opts.env,
      shell: false,
    });
  } catch (err) {
    // Refusals other than the five below are thrown at once, as errno exceptions (E2BIG…).
    if (typeof (err as NodeJS.ErrnoException)?.code === 'string' && (err as NodeJS.ErrnoException).syscall !== undefined) {
      throw new ProcessSpawnError(file, err as Error);
    }
    throw err;
  }
  if (child.pid === undefined) {
    // ENOENT, EACCES, EAGAIN, EMFILE, ENFILE arrive as a next-tick `error` event (or not at all).
    const refusal = new Promise<Error | undefined>((resolve) => {
      child.once('error', resolve);
      setImmediate(() => resolve(undefined));
    });
    child.stdout?.destroy();
    child.stderr?.destroy();
    throw new ProcessSpawnError(file, refusal);
  }
  child.on('error', () => {});
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  return new ManagedProcess(table, { pid: child.pid, startTime: undefined, stdout: child.stdout, stderr: child.stderr, exit }, opts);
}

/**
 * {@link spawnManaged} made by the spawn helper process: the fork happens there, not in this
 * (large) process; its stdout and stderr are read here all the same.
 * @throws ProcessSpawnError when the OS refuses (errno known), or the helper is gone.
 */
export async function spawnManagedVia(helper: SpawnHelper, table: HousekeepingThread, file: string, args: readonly string[], opts: ManagedSpawnOptions): Promise<ManagedProcess> {
  const child: RemoteChild = await helper.spawn({ file, args, cwd: opts.cwd, env: opts.env, stdout: opts.stdout === 'pipe', stderr: opts.stderr === 'pipe' });
  return new ManagedProcess(table, child, opts);
}

/** What a managed process is made of, wherever it was spawned. */
interface ChildSource {
  readonly pid: number;
  /** Its start time (clock ticks after boot) when the spawner read it; undefined to ask /proc here. */
  readonly startTime: number | null | undefined;
  readonly stdout: Readable | null;
  readonly stderr: Readable | null;
  readonly exit: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
}

export class ManagedProcess {
  /** Resolves with the leader's exit facts, at its exit. */
  readonly exited: Promise<ExitFacts>;
  /** Resolves once it exited and its tree was swept (never rejects). */
  readonly ended: Promise<ProcessEnd>;
  private readonly known = new Map<number, ProcInfo>();
  private readonly leaderStart: Promise<number | undefined>;
  private killTimer: NodeJS.Timeout | undefined;
  private hasExited = false;
  private readonly keepers: (() => void)[] = [];

  /** Its process id, also its process group's. */
  readonly pid: number;
  private readonly streams: { readonly stdout: Readable | null; readonly stderr: Readable | null };

  constructor(
    private readonly table: HousekeepingThread,
    child: ChildSource,
    private readonly opts: ManagedSpawnOptions,
  ) {
    const pid = child.pid;
    this.pid = pid;
    this.streams = { stdout: child.stdout, stderr: child.stderr };
    // Node discards a child's unread output at its exit (it resumes every pipe nobody listens to):
    // a job that prints and exits before its reader is attached (its launch is recorded first,
    // a database round trip) would lose every line. A 'readable' listener keeps the bytes,
    // unread, in the pipe's buffer and then the pipe itself, until `output()` hands them over.
    for (const stream of [child.stdout, child.stderr]) {
      if (stream === null) continue;
      const keep = () => {};
      stream.on('readable', keep);
      this.keepers.push(() => stream.removeListener('readable', keep));
    }
    // Asked at once: until the leader is reaped (after its exit event) its pid is its own.
    this.leaderStart = child.startTime !== undefined ? Promise.resolve(child.startTime ?? undefined) : table.describe(pid).then((d) => d.info?.startTime);
    this.exited = child.exit.then(({ code, signal }) => {
      this.hasExited = true;
      clearTimeout(this.killTimer);
      return exitFactsOf(code, signal);
    });
    this.ended = this.exited.then(async (exit) => ({ exit, leftovers: await this.sweep() }));
  }

  /** Its piped output, to be read from now on (what it printed before is in it); null for a stream not piped. */
  output(): { readonly stdout: Readable | null; readonly stderr: Readable | null } {
    for (const release of this.keepers.splice(0)) release();
    return this.streams;
  }

  /** One pass: `signal` to its group and every captured process. @returns live processes signalled (0 without `/proc`). */
  async signalTree(signal: NodeJS.Signals): Promise<number> {
    // Once the leader exited its pid is not followed (it may be reused).
    const root = this.hasExited ? null : this.pid;
    const known = [...this.known.values()];
    const pass = await this.table.signalTree({ root, pgid: this.pid, mark: this.opts.mark, notBefore: await this.leaderStart, known }, signal);
    for (const p of known) if (this.known.get(p.pid) === p) this.known.delete(p.pid);
    for (const p of pass.known) this.known.set(p.pid, p);
    return pass.known.length;
  }

  /** SIGTERM to its tree now, SIGKILL after `graceMs` unless it exited; calling again restarts the grace. Await {@link ended}. */
  stop(graceMs: number): void {
    if (this.hasExited) return;
    void this.signalTree('SIGTERM').then(() => {
      if (this.hasExited) return;
      clearTimeout(this.killTimer);
      this.killTimer = setTimeout(() => void this.signalTree('SIGKILL'), graceMs);
      this.killTimer.unref();
    });
  }

  /** After the exit: SIGKILL its group, its captured tree and its mark's holders until none is left. */
  private async sweep(): Promise<SweepReport> {
    return sweepTree(this.table, { root: null, pgid: this.pid, mark: this.opts.mark, notBefore: await this.leaderStart, known: [...this.known.values()] }, this.opts.sweep);
  }
}
