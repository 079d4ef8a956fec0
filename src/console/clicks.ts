// Clicks (api-decisions.md, "Service routes with partial shape"), a ring buffer per project; no events, which they would drown.
import type { ClickRecord, ClickStore } from '../state/state-store.js';
import { nowIso } from './now.js';

export class ClickLog {
  constructor(private readonly repo: ClickStore) {}

  /** Clicks kept per project. */
  get ringSize(): number {
    return this.repo.ringSize;
  }

  /** Clicks kept in all projects together. */
  get maxTotal(): number {
    return this.repo.maxTotal;
  }

  /** Clicks stored now, of all projects (at most {@link maxTotal}). */
  size(): Promise<number> {
    return this.repo.size();
  }

  /** Appends a click, evicting past the ring and the total in the same transaction; the caller checks the project exists. */
  append(c: { projectId: string; target: string; x?: number; y?: number; meta?: Readonly<Record<string, unknown>> }): Promise<ClickRecord> {
    return this.repo.append({
      projectId: c.projectId,
      target: c.target,
      x: c.x ?? null,
      y: c.y ?? null,
      meta: c.meta ?? null,
      clickedAt: nowIso(),
    });
  }

  /** Newest first; `projectId` null lists every project's. */
  list(projectId: string | null, limit: number): Promise<ClickRecord[]> {
    return this.repo.list(projectId, limit);
  }
}
