/**
 * Store generations: each watcher change gives what it touched the counter's next value; an answer
 * is valid while its generation is current. Entity-file changes are logged too (change-log.ts).
 */
import { ProjectChangeLog, type ProjectChanges } from './change-log.js';
import { isEntityFileName } from './project-index.js';
import type { StoreChange } from './watcher.js';

export class StoreGenerations {
  private counter = 1;
  /** Generation of the last change of every project at once (`projects/` replaced…). */
  private allSince = 1;
  private readonly projectGen = new Map<string, number>();
  private memoryGen = 1;
  private listGen = 1;
  readonly changeLog = new ProjectChangeLog();

  /** The project list's generation: it is read again when this moved. */
  get list(): number {
    return this.listGen;
  }

  /** The current generation of a project's answers. */
  project(projectId: string): number {
    return Math.max(this.projectGen.get(projectId) ?? 0, this.allSince);
  }

  /** The current generation of the memory entries. */
  get memory(): number {
    return this.memoryGen;
  }

  /** What changed in the project by file since the workers' indexes (sent with each task). */
  changesOf(projectId: string): ProjectChanges {
    return this.changeLog.changesOf(projectId, this.project(projectId));
  }

  /** Marks a project's answers stale as a whole: the next task reads it whole. */
  invalidateProject(projectId: string): void {
    this.projectGen.set(projectId, ++this.counter);
    this.changeLog.whole(projectId, this.counter);
  }

  /** Marks everything stale. */
  invalidateAll(): void {
    this.allSince = ++this.counter;
    this.memoryGen = this.counter;
    this.listGen = this.counter;
    this.changeLog.wholeAll();
  }

  /** Applies one change reported by the store watcher. */
  apply(c: StoreChange): void {
    switch (c.kind) {
      case 'entity-file': {
        // A file no listing shows (a note, a dot-file) changes no answer.
        if (!isEntityFileName(c.name)) return;
        const previous = this.project(c.projectId);
        this.projectGen.set(c.projectId, ++this.counter);
        this.changeLog.file(c.projectId, previous, { gen: this.counter, folder: c.folder, name: c.name });
        return;
      }
      case 'project':
        this.invalidateProject(c.projectId);
        return;
      case 'memory':
        this.memoryGen = ++this.counter;
        return;
      case 'all':
        this.invalidateAll(); // `projects/` replaced: every project changed
        return;
      case 'projects':
        this.listGen = ++this.counter;
        return;
    }
  }
}
