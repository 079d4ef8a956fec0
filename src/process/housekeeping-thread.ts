/** Main-thread side of the process worker: one thread runs every `/proc` scan and its signals, so killing a big tree never stalls the event loop. */
import fs from 'node:fs';
import { Piscina } from 'piscina';
import treeKill from 'tree-kill';
import { NO_REQUIRE_ESM } from '../workers/pool.js';
import { HangWatch } from './hang-watch.js';
import type { DescribeResult, GroupNiceResult, ProcTask, TreePassResult, TreeTarget } from './proc-task.js';

/** How the housekeeping thread is watched: a task unanswered within `answerLimitMs` (ms) is aborted, and `onHang` told. */
export interface HousekeepingWatch {
  /** CONSOLE_THREAD_ANSWER_LIMIT_MS (default 60 s), counted as hang-watch.ts counts it. */
  readonly answerLimitMs?: number;
  /** Told of each task aborted (the thread is then replaced; the task falls back as a failed one). */
  readonly onHang?: (err: Error) => void;
}

export class HousekeepingThread {
  private readonly pool: Piscina;
  private readonly watch: HangWatch;

  /**
   * @param filename the compiled worker (WORKER_FILES.proc). @param watch its answer limit (hang-watch.ts): a thread
   * stuck in a `/proc` read or a checkpoint holds up no job's end, no kill, no later checkpoint.
   * @throws Error when `filename` does not exist (not built).
   */
  constructor(filename: string, watch: HousekeepingWatch = {}) {
    if (!fs.existsSync(filename)) throw new Error(`process worker not found: ${filename} (run npm run build)`);
    // One thread: passes of one tree run in order, and a scan never competes with another.
    this.pool = new Piscina({ filename, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, execArgv: NO_REQUIRE_ESM });
    // Unheard, a worker's death outside a task would end the service; Piscina replaces it, and the methods below fall back.
    this.pool.on('error', () => {});
    this.watch = new HangWatch('housekeeping', watch.onHang, watch.answerLimitMs);
  }

  /**
   * One kill pass over a tree (TreePassTask). Never rejects: without the worker or `/proc` the group
   * (and a live root's tree, by tree-kill's `ps` walk) is signalled here; `procAvailable` then false.
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

  /** Runs another housekeeping task (a WORKER_FILES module) on this thread, as threads cost about 11 MB each. @throws what the task throws. */
  runTask<T>(filename: string, task: object): Promise<T> {
    return this.watch.run((signal) => this.pool.run(task, { filename, signal }) as Promise<T>);
  }

  /** Ends the worker thread; tasks still queued reject (the methods above then fall back). A thread stuck in a native call is let go. */
  async close(): Promise<void> {
    await this.pool.destroy();
  }

  private run<T>(task: ProcTask): Promise<T> {
    return this.watch.run((signal) => this.pool.run(task, { signal }) as Promise<T>);
  }
}

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
