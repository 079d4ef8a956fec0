/**
 * Task and result types of the store-read worker (src/workers/read-store.ts; style.md,
 * practice 7: types beside the worker). Tasks are plain serialisable objects; results carry
 * ready JSON bytes, moved to the main thread without a copy.
 */
import type { StoreAccess } from './read-store-file.js';
import type { MemoryEntryCheck, MemoryListing, ProjectEntry, ProjectListing, TakeFileRead } from './store-reads.js';

/** One read of the store (issue 10, items 2-4), by operation. Ids are checked by the caller. */
export type ReadStoreTask =
  | { readonly op: 'projects'; readonly access: StoreAccess }
  | { readonly op: 'project'; readonly access: StoreAccess; readonly projectId: string }
  | { readonly op: 'memory'; readonly access: StoreAccess; readonly toggles: Readonly<Record<string, boolean>> }
  | { readonly op: 'take-file'; readonly access: StoreAccess; readonly projectId: string; readonly takeId: string }
  | { readonly op: 'memory-entry'; readonly access: StoreAccess; readonly entryId: string };

/** The result of each operation. */
export interface ReadStoreResults {
  readonly projects: ProjectListing;
  readonly project: ProjectEntry | { readonly kind: 'absent'; readonly id: string };
  readonly memory: MemoryListing;
  readonly 'take-file': TakeFileRead;
  readonly 'memory-entry': MemoryEntryCheck;
}

export type ReadStoreResult<Op extends ReadStoreTask['op']> = ReadStoreResults[Op];
