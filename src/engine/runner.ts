/** The port through which the engine store runs work off the event loop; src/workers implements it (workers -> engine). */
import type { ReadStoreResult, ReadStoreTask } from './read-store-task.js';
import type { SynthesisResult, SynthesisTask } from './synthesis-task.js';

/** What the engine store needs from the pool; tests of the store may pass their own. */
export interface SynthesisRunner {
  run(task: SynthesisTask): Promise<SynthesisResult>;
  /** One store read (src/workers/read-store.ts). @throws StoreReadTimeoutError past the deadline. */
  read<T extends ReadStoreTask>(task: T): Promise<ReadStoreResult<T['op']>>;
  /** The ids of the worker threads running now (a thread replaced after a deadline is gone). */
  threadIds?(): number[];
}
