/** Synthesis worker task and result types, beside the worker (style.md); plain serialisable objects. */
import type { ProjectChanges } from './change-log.js';
import type { StoreAccess } from './read-store-file.js';
import type { SynthesisOutcome, SynthesisQuery, TakeStates } from './synthesize.js';

export interface SynthesisTask {
  /** The engine store: its real root and the bounds of its files. */
  readonly access: StoreAccess;
  /** A valid project identifier (checked by the caller). */
  readonly projectId: string;
  /** The project's generation on the main thread; `changes` since the workers' indexes let a recent index re-read only those. */
  readonly generation: number;
  /** The entity files changed since the workers' indexes: a worker whose index is recent enough re-reads only those, else the whole project. */
  readonly changes: ProjectChanges;
  readonly query: SynthesisQuery;
  /** Recorded take states of the project (only the takes that have any). */
  readonly takeStates: TakeStates;
}

/** How the worker got the project's index for a task, for the counters and the change log. */
export interface IndexLoad {
  /** `cached`: as held; `patched`: the changed files re-read; `full`: every file read. */
  readonly kind: 'cached' | 'patched' | 'full';
  /** Store files read for this task. */
  readonly filesRead: number;
  /** The worker thread's id, and the generation of the index it now holds for the project. */
  readonly thread: number;
  readonly held: number;
  /** Projects of the same store whose index the thread evicted (LRU). */
  readonly evicted: readonly string[];
}

export type SynthesisResult = SynthesisOutcome & { readonly load: IndexLoad };
