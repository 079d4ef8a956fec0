/**
 * Task and result types of the synthesis worker (style.md, practice 7: types beside the
 * worker). Tasks are plain serialisable objects.
 */
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
  readonly query: SynthesisQuery;
  /** Recorded take states of the project (only the takes that have any). */
  readonly takeStates: TakeStates;
}

export type SynthesisResult = SynthesisOutcome;
