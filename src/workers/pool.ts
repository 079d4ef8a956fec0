/**
 * The synthesis worker pool (Piscina). Workers always run the compiled JavaScript in
 * `dist/workers`: vitest's transform does not reach worker threads (style.md, practice 7),
 * so `npm test` builds first.
 */
import path from 'node:path';
import { Piscina } from 'piscina';
import { REPO_ROOT } from '../main/config.js';
import type { SynthesisResult, SynthesisTask } from './synthesis-task.js';

export const SYNTHESIS_WORKER_FILE = path.join(REPO_ROOT, 'dist', 'workers', 'synthesize.js');

/** Worker flags: require(esm) off, where this Node has the flag (20.17 and later); the process worker (src/process) uses them too. */
export const NO_REQUIRE_ESM = process.allowedNodeEnvironmentFlags.has('--no-experimental-require-module') ? ['--no-experimental-require-module'] : [];

/** What the engine store needs from the pool; tests of the store may pass their own. */
export interface SynthesisRunner {
  run(task: SynthesisTask): Promise<SynthesisResult>;
}

/** Pool figures for `GET /api/system-status`. */
export interface PoolStats {
  readonly threads: number;
  readonly maxThreads: number;
  readonly queueSize: number;
  readonly completed: number;
  readonly utilization: number;
}

export class SynthesisPool implements SynthesisRunner {
  private readonly pool: Piscina;

  /** @param threads number of worker threads, kept alive for the life of the service. */
  constructor(threads: number, filename: string = SYNTHESIS_WORKER_FILE) {
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
    return this.pool.run(task) as Promise<SynthesisResult>;
  }

  stats(): PoolStats {
    return {
      threads: this.pool.threads.length,
      maxThreads: this.pool.options.maxThreads,
      queueSize: this.pool.queueSize,
      completed: this.pool.completed,
      utilization: this.pool.utilization,
    };
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
