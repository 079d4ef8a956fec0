/** Store-read worker task and result types, beside the worker (style.md); results are JSON bytes moved without a copy. */
import type { StoreAccess } from './read-store-file.js';
import type { MemoryEntryCheck, MemoryListing, ProjectEntry, ProjectListing, TakeFileRead } from './store-reads.js';

/** One read of the store, by operation; ids are checked by the caller. */
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
