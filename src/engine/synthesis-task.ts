/**
 * Task and result types of the synthesis worker (style.md, practice 7: types beside the
 * worker). Tasks are plain serialisable objects.
 */
import type { ProjectChanges } from './change-log.js';
import type { StoreAccess } from './read-store-file.js';
import type { SynthesisOutcome, SynthesisQuery, TakeStates } from './synthesize.js';

export interface SynthesisTask {
  /** The engine store: its real root and the bounds of its files. */
  readonly access: StoreAccess;
  /** A valid project identifier (checked by the caller). */
  readonly projectId: string;
  /**
   * The store generation of the project as the main thread knows it: a worker whose cached
   * index has another generation reloads the project from disk first.
   */
  readonly generation: number;
  /**
   * The entity files changed since the workers' indexes (issue 12): a worker whose index is
   * recent enough re-reads only those, else it reads the project whole.
   */
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
  /** Projects (of the same store) whose index the thread dropped (least recently used). */
  readonly evicted: readonly string[];
}

export type SynthesisResult = SynthesisOutcome & { readonly load: IndexLoad };
