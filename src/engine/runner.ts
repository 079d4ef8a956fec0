/**
 * What the engine store needs to run its work off the event loop (the worker pool in
 * src/workers implements it): the engine owns the port, so the dependency points one way,
 * workers -> engine.
 */
import type { ReadStoreResult, ReadStoreTask } from './read-store-task.js';
import type { SynthesisResult, SynthesisTask } from './synthesis-task.js';

/** What the engine store needs from the pool; tests of the store may pass their own. */
export interface SynthesisRunner {
  run(task: SynthesisTask): Promise<SynthesisResult>;
  /**
   * One read of the store (src/workers/read-store.ts).
   * @throws StoreReadTimeoutError past the deadline.
   */
  read<T extends ReadStoreTask>(task: T): Promise<ReadStoreResult<T['op']>>;
  /** The ids of the worker threads running now (a thread replaced after a deadline is gone). */
  threadIds?(): number[];
}

