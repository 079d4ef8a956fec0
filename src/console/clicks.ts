/**
 * Clicks (api-decisions.md, "Service routes with partial shape", Clicks): appended to a
 * persisted ring buffer per project. Clicks emit no event: they are high-rate telemetry and
 * would drown the bus (the spec leaves their events unspecified).
 */
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

  /**
   * Appends a click (one transaction with the eviction of the project's oldest past the ring
   * and of the oldest of all past the total). The caller checks that the project exists.
   */
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
