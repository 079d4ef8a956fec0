/**
 * Main-thread side of the process worker: one thread runs every `/proc` scan and its signals, so
 * killing a big tree never stalls the event loop; other housekeeping tasks share it. Without
 * `/proc`, tree-kill's `ps` walk and a group signal stand in.
 */
import fs from 'node:fs';
import { Piscina } from 'piscina';
import treeKill from 'tree-kill';
import { NO_REQUIRE_ESM } from '../workers/pool.js';
import type { DescribeResult, GroupNiceResult, ProcTask, TreePassResult, TreeTarget } from './proc-task.js';

export class HousekeepingThread {
  private readonly pool: Piscina;

  /**
   * @param filename the compiled worker (WORKER_FILES.proc in src/config/paths.ts).
   * @throws Error when the file does not exist (the service was not built).
   */
  constructor(filename: string) {
    if (!fs.existsSync(filename)) throw new Error(`process worker not found: ${filename} (run npm run build)`);
    // One thread: passes of one tree run in order, and a scan never competes with another.
    this.pool = new Piscina({ filename, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, execArgv: NO_REQUIRE_ESM });
    // A worker that dies outside a task is replaced by Piscina; unheard, the event would end
    // the service. Tasks it took reject, and the methods below fall back.
    this.pool.on('error', () => {});
  }

  /**
   * One kill pass over a tree: captures it in `/proc`, then signals its group and every
   * captured process (see `TreePassTask`). Never rejects: when the worker cannot run it, or
   * `/proc` is missing, the group (and, with a live root, tree-kill's walk) is signalled here.
   * @returns the tree's processes alive when signalled; `procAvailable` false when unknown.
   */
  async signalTree(target: TreeTarget, signal: NodeJS.Signals): Promise<TreePassResult> {
    let result: TreePassResult;
    try {
      result = await this.run<TreePassResult>({ kind: 'tree-pass', ...target, known: [...target.known], signal });
    } catch {
      result = { procAvailable: false, known: [...target.known] };
    }
    if (!result.procAvailable) signalWithoutProc(target, signal);
    return result;
  }

  /** `pid`'s stat and command line, each null when gone or unreadable. Never rejects. */
  async describe(pid: number): Promise<DescribeResult> {
    return this.run<DescribeResult>({ kind: 'describe', pid }).catch(() => ({ info: null, cmdline: null }));
  }

  /** The system's boot time in ms since the epoch; null when unknown. Never rejects. */
  async bootTimeMs(): Promise<number | null> {
    return this.run<number | null>({ kind: 'boot-time' }).catch(() => null);
  }

  /** Sets the nice value of `pid`'s autogroup (see GroupNiceTask). Never rejects: `refused` when the worker cannot. */
  async groupNice(pid: number, nice: number): Promise<GroupNiceResult> {
    return this.run<GroupNiceResult>({ kind: 'group-nice', pid, nice }).catch(() => 'refused' as const);
  }

  /**
   * Runs another housekeeping task on this thread, between the /proc tasks: the service keeps
   * one such thread (each costs about 11 MB), and the state database's WAL checkpoints run here
   * (src/state/checkpointer.ts).
   * @param filename a compiled Piscina task module (src/config/paths.ts: WORKER_FILES).
   * @returns what the task returns.
   * @throws what the task throws; Piscina's error once the thread was closed.
   */
  runTask<T>(filename: string, task: object): Promise<T> {
    return this.pool.run(task, { filename }) as Promise<T>;
  }

  /** Ends the worker thread; tasks still queued reject (the methods above then fall back). */
  async close(): Promise<void> {
    await this.pool.destroy();
  }

  private run<T>(task: ProcTask): Promise<T> {
    return this.pool.run(task) as Promise<T>;
  }
}

/** Without `/proc`: the group, and the root's tree as `ps` shows it. */
function signalWithoutProc(target: TreeTarget, signal: NodeJS.Signals): void {
  if (target.root !== null) {
    treeKill(target.root, signal, () => {
      // The root may already be gone; tree-kill reports that as an error we do not need.
    });
  }
  if (target.pgid === null) return;
  try {
    process.kill(-target.pgid, signal);
  } catch {
    // ESRCH: the group is gone.
  }
}
