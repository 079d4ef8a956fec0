/**
 * Selection and recent items (api-decisions.md, "Service routes with partial shape":
 * Selection, Recent). Storing a project's selection is what marks it, and its most specific
 * selected item, as recently opened (in the same transaction).
 */
import type { Db } from '../state/db.js';
import type { RecentRecord, SelectionRecord, SelectionRepo } from '../state/selection-repo.js';
import { nowIso } from './commit.js';

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
  private readonly putTx;

  constructor(
    db: Db,
    private readonly repo: SelectionRepo,
  ) {
    this.putTx = db.transaction((s: SelectionRecord) => {
      repo.put(s);
      repo.touch({ projectId: s.projectId, kind: 'project', itemId: s.projectId, openedAt: s.updatedAt }, RECENT_PROJECTS_KEPT);
      for (const [member, kind] of SELECTION_ITEMS) {
        const id = s.selection[member];
        if (typeof id === 'string') {
          repo.touch({ projectId: s.projectId, kind, itemId: id, openedAt: s.updatedAt }, RECENT_ITEMS_KEPT);
          break;
        }
      }
    });
  }

  /** The stored selection of a project, or undefined. */
  get(projectId: string): SelectionRecord | undefined {
    return this.repo.get(projectId);
  }

  /** Replaces a project's selection and records the project and its most specific item as recent. */
  put(projectId: string, selection: Readonly<Record<string, unknown>>): SelectionRecord {
    const record = { projectId, selection, updatedAt: nowIso() };
    this.putTx(record);
    return record;
  }

  /** Recent projects and items, each newest first. */
  recent(limit: number): { projects: RecentRecord[]; items: RecentRecord[] } {
    return this.repo.recent(limit);
  }
}
