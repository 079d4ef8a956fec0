/**
 * Store generations (issue: core slice, item 3): which cached answers are still valid. One
 * monotonic change counter; every change the watcher reports takes its next value as the
 * generation of what it touched (a project, the memory entries, the project list, or all).
 * An answer is valid while the generation it was synthesised at is current.
 */
import type { StoreChange } from './watcher.js';

export class StoreGenerations {
  /** Monotonic change counter; every invalidation takes the next value. */
  private counter = 1;
  /** Generation of the last change of every project at once (`projects/` replaced…). */
  private allSince = 1;
  private readonly projectGen = new Map<string, number>();
  private memoryGen = 1;

  /** The newest change of any kind: the project list is read again when it moved. */
  get change(): number {
    return this.counter;
  }

  /** The current generation of a project's answers. */
  project(projectId: string): number {
    return Math.max(this.projectGen.get(projectId) ?? 0, this.allSince);
  }

  /** The current generation of the memory entries. */
  get memory(): number {
    return this.memoryGen;
  }

  /** Marks a project's answers stale. */
  invalidateProject(projectId: string): void {
    this.projectGen.set(projectId, ++this.counter);
  }

  /** Marks everything stale. */
  invalidateAll(): void {
    this.allSince = ++this.counter;
    this.memoryGen = this.counter;
  }

  /** Applies one change reported by the store watcher. */
  apply(c: StoreChange): void {
    if (c.kind === 'project') this.invalidateProject(c.projectId);
    else if (c.kind === 'memory') this.memoryGen = ++this.counter;
    else if (c.kind === 'all') this.invalidateAll(); // `projects/` replaced: every project changed
    else ++this.counter; // the project list is rebuilt when `change` moved
  }
}
