/**
 * The worker pool (Piscina): synthesis tasks and every other read of the engine store, so
 * that the event loop never reads or parses a store file (issue 10, item 3). Workers always
 * run the compiled JavaScript in `dist/workers`: vitest's transform does not reach worker
 * threads (style.md, practice 7), so `npm test` builds first.
 *
 * Every task has a deadline (CONSOLE_STORE_READ_TIMEOUT_MS, issue 10, item 2): past it the
 * task is aborted and a running one's thread is terminated and replaced, so one slow read
 * cannot stall the pool for every project. Reads never wait on a pipe or a device (they are
 * opened non-blocking and must be regular files: src/engine/read-store-file.ts); the deadline
 * is the net for the rest (a slow disk, a huge file with a raised bound).
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { StoreReadTimeoutError } from '../engine/errors.js';
import type { ReadStoreResult, ReadStoreTask } from '../engine/read-store-task.js';
import type { SynthesisRunner } from '../engine/runner.js';
import type { SynthesisResult, SynthesisTask } from '../engine/synthesis-task.js';
import { TaskDeadlines } from './task-deadlines.js';


/** Worker flags: require(esm) off, where this Node has the flag (20.17 and later); the process worker (src/process) uses them too. */
export const NO_REQUIRE_ESM = process.allowedNodeEnvironmentFlags.has('--no-experimental-require-module') ? ['--no-experimental-require-module'] : [];

/** Pool figures for `GET /api/system-status`. */
export interface PoolStats {
  readonly threads: number;
  readonly maxThreads: number;
  readonly queueSize: number;
  readonly completed: number;
  readonly utilization: number;
  /** Tasks aborted at their deadline since start-up (CONSOLE_STORE_READ_TIMEOUT_MS). */
  readonly timedOut: number;
}

export interface PoolOptions {
  /** CONSOLE_STORE_READ_TIMEOUT_MS: deadline of each task, queueing included. Default: none. */
  readonly timeoutMs?: number;
  /** `Retry-After` of the 503 a task past its deadline answers (CONSOLE_RETRY_AFTER_SECONDS). */
  readonly retryAfterSeconds?: number;
  /** The store-read worker file (tests may pass another). */
  readonly readStoreFile?: string;
}

export class SynthesisPool implements SynthesisRunner {
  private readonly pool: Piscina;
  private readonly timeoutMs: number | null;
  /** The tasks' deadlines, one timer for all (task-deadlines.ts); null without a timeout. */
  private readonly deadlines: TaskDeadlines | null;
  private readonly retryAfterSeconds: number;
  private readonly readStoreFile: string;
  private timedOut = 0;

  /**
   * @param threads number of worker threads, kept alive for the life of the service.
   * @param files the compiled worker files: synthesis and store reads (src/config/paths.ts;
   *   tests may pass others).
   */
  constructor(threads: number, files: { readonly synthesis: string; readonly readStore: string }, opts: PoolOptions = {}) {
    const filename = files.synthesis;
    this.timeoutMs = opts.timeoutMs ?? null;
    this.deadlines = this.timeoutMs === null ? null : new TaskDeadlines(this.timeoutMs);
    this.retryAfterSeconds = opts.retryAfterSeconds ?? 1;
    this.readStoreFile = files.readStore;
    this.pool = new Piscina({
      filename,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: Infinity,
      // Piscina first tries require() on the worker file, then import(). On Node 20.19+
      // require() of an ES module runs, and it can abort the whole process with a failed
      // assertion in ModuleWrap::CreateRequiredModuleFacade (seen in CI). Turning require(esm)
      // off in the workers makes require() throw ERR_REQUIRE_ESM, so Piscina takes import().
      // Only this flag: a Worker refuses process-wide ones (--expose-gc) given explicitly, and
      // V8 flags reach workers anyway.
      execArgv: NO_REQUIRE_ESM,
    });
  }

  run(task: SynthesisTask): Promise<SynthesisResult> {
    return this.runWithDeadline(task) as Promise<SynthesisResult>;
  }

  read<T extends ReadStoreTask>(task: T): Promise<ReadStoreResult<T['op']>> {
    return this.runWithDeadline(task, this.readStoreFile) as Promise<ReadStoreResult<T['op']>>;
  }

  private async runWithDeadline(task: object, filename?: string): Promise<unknown> {
    const signal = this.deadlines?.start();
    try {
      return await this.pool.run(task, { ...(filename ? { filename } : {}), ...(signal ? { signal } : {}) });
    } catch (err) {
      // Piscina rejects an aborted task with its own AbortError; a running one's thread is
      // terminated and a new one started (minThreads).
      if (signal?.aborted && (err as Error)?.name === 'AbortError') {
        this.timedOut++;
        throw new StoreReadTimeoutError(this.timeoutMs as number, this.retryAfterSeconds, { cause: err });
      }
      throw err;
    } finally {
      signal?.done();
    }
  }

  threadIds(): number[] {
    return this.pool.threads.map((t) => t.threadId);
  }

  /**
   * Time the threads spent running tasks since the pool started, in ms (summed over threads;
   * Piscina's run-time histogram: its mean times its count, so an estimate). Its rate over the
   * number of threads is the pool's utilisation over that time.
   */
  busyMs(): number {
    return this.pool.utilization * this.pool.duration * this.pool.options.maxThreads;
  }

  stats(): PoolStats {
    return {
      threads: this.pool.threads.length,
      maxThreads: this.pool.options.maxThreads,
      queueSize: this.pool.queueSize,
      completed: this.pool.completed,
      utilization: this.pool.utilization,
      timedOut: this.timedOut,
    };
  }

  /**
   * Stops the threads. A thread stuck in a system call cannot be stopped by V8: after `waitMs`
   * the wait is given up, so that shutdown still ends within its grace.
   * @returns whether every thread stopped.
   */
  async close(waitMs = Infinity): Promise<boolean> {
    const destroyed = this.pool.destroy().then(() => true);
    if (waitMs === Infinity) return destroyed;
    let timer: NodeJS.Timeout | undefined;
    const gaveUp = new Promise<false>((resolve) => {
      timer = setTimeout(() => resolve(false), waitMs);
      timer.unref();
    });
    try {
      return await Promise.race([destroyed, gaveUp]);
    } finally {
      clearTimeout(timer);
    }
  }
}
