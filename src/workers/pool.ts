/** Piscina pool for synthesis and store reads, so the event loop never parses a store file; runs compiled `dist/workers` (vitest cannot transform worker threads). */
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
  private readonly deadlines: TaskDeadlines | null;
  private readonly retryAfterSeconds: number;
  private readonly readStoreFile: string;
  private timedOut = 0;

  /** @param threads worker threads, kept for the service's life; @param files compiled worker files (src/config/paths.ts). */
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
      // require() of an ES module can abort the process (ModuleWrap assertion, Node 20.19+);
      // with require(esm) off Piscina falls back to import(). Workers refuse process-wide flags.
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
      // Piscina rejects an aborted task with an AbortError and replaces a running one's thread.
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

  /** Ms the threads spent running tasks since start, summed over threads (an estimate from Piscina's histogram). */
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

  /** Stops the threads, waiting at most `waitMs` (one stuck in a system call cannot be stopped). @returns whether every thread stopped. */
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
