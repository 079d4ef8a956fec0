// Selection and recent items (api-decisions.md, "Service routes with partial shape"): storing a
// selection marks the project and its most specific item as recent, in the same transaction.
import type { RecentRecord, SelectionRecord, StateStore } from '../state/state-store.js';
import { nowIso } from './now.js';

/** Selection members naming items, most specific first; the first present one becomes recent. */
export const SELECTION_ITEMS = [
  ['takeId', 'take'],
  ['shotId', 'shot'],
  ['beatId', 'beat'],
  ['sceneId', 'scene'],
  ['episodeId', 'episode'],
] as const;

/** Recent projects kept. */
export const RECENT_PROJECTS_KEPT = 50;
/** Recent items kept (all projects together). */
export const RECENT_ITEMS_KEPT = 200;

export class Selections {
  constructor(private readonly store: StateStore) {}

  /** The stored selection of a project, or undefined. */
  get(projectId: string): Promise<SelectionRecord | undefined> {
    return this.store.selection.get(projectId);
  }

  /** Replaces a project's selection and records the project and its most specific item as recent. */
  async put(projectId: string, selection: Readonly<Record<string, unknown>>): Promise<SelectionRecord> {
    const s = { projectId, selection, updatedAt: nowIso() };
    await this.store.transaction(async (tx) => {
      await tx.selection.put(s);
      await tx.selection.touch({ projectId, kind: 'project', itemId: projectId, openedAt: s.updatedAt }, RECENT_PROJECTS_KEPT);
      for (const [member, kind] of SELECTION_ITEMS) {
        const id = selection[member];
        if (typeof id === 'string') {
          await tx.selection.touch({ projectId, kind, itemId: id, openedAt: s.updatedAt }, RECENT_ITEMS_KEPT);
          break;
        }
      }
    });
    return s;
  }

  /** Recent projects and items, each newest first. */
  recent(limit: number): Promise<{ projects: RecentRecord[]; items: RecentRecord[] }> {
    return this.store.selection.recent(limit);
  }
}
