/** Piscina worker: one engine-store read for the main thread (src/engine/store-reads.ts); bodies are moved, not copied. */
import { checkMemoryEntrySync, listMemorySync, listProjectsSync, readProjectSync, readTakeFileSync } from '../engine/store-reads.js';
import type { ReadStoreResult, ReadStoreTask } from '../engine/read-store-task.js';
import { moving } from './transfer.js';

export default function readStore(task: ReadStoreTask): ReadStoreResult<ReadStoreTask['op']> {
  switch (task.op) {
    case 'projects': {
      const listing = listProjectsSync(task.access);
      return moving(listing, [listing.body]);
    }
    case 'project': {
      const entry = readProjectSync(task.access, task.projectId);
      return moving(entry, entry.kind === 'ok' ? [entry.body] : []);
    }
    case 'memory': {
      const listing = listMemorySync(task.access, task.toggles);
      return moving(listing, listing.ok ? [listing.body] : []);
    }
    case 'take-file':
      return readTakeFileSync(task.access, task.projectId, task.takeId);
    case 'memory-entry':
      return checkMemoryEntrySync(task.access, task.entryId);
  }
}
