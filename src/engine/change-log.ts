/**
 * Which entity files of each project changed since the index a worker holds (issue 12, P8):
 * sent with every synthesis task, so that a worker patches its index by re-reading those
 * files only (src/engine/index-patch.ts) instead of reading the whole project again.
 *
 * Per project: `since`, a generation up to which changes may have been anything (a project
 * file, a folder replaced: a whole re-read), and every entity file changed after it. Each
 * result tells which generation its thread now holds; entries every such thread holds are
 * dropped, so the log stays as long as the changes the slowest holder has not seen.
 */
import type { EntityFile } from './index-patch.js';

/** An entity file that changed, at the generation its change took. */
export interface EntityFileChange extends EntityFile {
  readonly gen: number;
}

/**
 * What a synthesis task carries: every change after `since` is one of `files`. A worker whose
 * index is of a generation at least `since` re-reads the files changed after it; any other
 * worker reads the project whole.
 */
export interface ProjectChanges {
  readonly since: number;
  readonly files: readonly EntityFileChange[];
}

interface Log {
  since: number;
  files: EntityFileChange[];
}

export class ProjectChangeLog {
  private readonly logs = new Map<string, Log>();
  /** By project, the generation each worker thread (by thread id) holds. */
  private readonly held = new Map<string, Map<number, number>>();

  /** A whole change of the project at generation `gen`: nothing before it can be patched. */
  whole(projectId: string, gen: number): void {
    this.logs.set(projectId, { since: gen, files: [] });
  }

  /** A whole change of every project (`projects/` replaced). */
  wholeAll(): void {
    this.logs.clear();
  }

  /**
   * An entity file changed at `change.gen`.
   * @param previous the project's generation before this change.
   */
  file(projectId: string, previous: number, change: EntityFileChange): void {
    let log = this.logs.get(projectId);
    if (!log) this.logs.set(projectId, (log = { since: previous, files: [] }));
    log.files.push(change);
  }

  /** The changes a task for the project at generation `current` carries. */
  changesOf(projectId: string, current: number): ProjectChanges {
    const log = this.logs.get(projectId);
    // No log: the project has not changed by file since the workers could have read it.
    return log ? { since: log.since, files: log.files } : { since: current, files: [] };
  }

  /**
   * A worker thread reported the generation of the index it now holds for the project, and the
   * projects it no longer holds. Entries every holder has seen are dropped.
   * @param live the ids of the threads running now (held generations of others are forgotten).
   */
  noteHeld(projectId: string, thread: number, gen: number, evicted: readonly string[], live: ReadonlySet<number> | null): void {
    for (const p of evicted) this.held.get(p)?.delete(thread);
    let held = this.held.get(projectId);
    if (!held) this.held.set(projectId, (held = new Map()));
    held.set(thread, gen);
    let min = Infinity;
    for (const [t, g] of held) {
      if (live !== null && !live.has(t)) held.delete(t);
      else min = Math.min(min, g);
    }
    const log = this.logs.get(projectId);
    if (!log || min === Infinity || min <= log.since) return;
    log.since = min;
    const keep = log.files.findIndex((f) => f.gen > min);
    log.files = keep === -1 ? [] : log.files.slice(keep);
  }

  /** Entity file changes kept for the workers, all projects together (system status). */
  get size(): number {
    let n = 0;
    for (const log of this.logs.values()) n += log.files.length;
    return n;
  }
}
