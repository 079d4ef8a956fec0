/**
 * Which entity files of each project changed since a worker's index, sent with every synthesis
 * task so workers patch instead of re-reading (index-patch.ts).
 */
import type { EntityFile } from './index-patch.js';

/** An entity file that changed, at the generation its change took. */
export interface EntityFileChange extends EntityFile {
  readonly gen: number;
}

/** What a task carries: every change after `since` is in `files`; a worker holding an older index reads the project whole. */
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
  private readonly held = new Map<string, Map<number, number>>();

  /** A whole change of the project at generation `gen`: nothing before it can be patched. */
  whole(projectId: string, gen: number): void {
    this.logs.set(projectId, { since: gen, files: [] });
  }

  /** A whole change of every project (`projects/` replaced). */
  wholeAll(): void {
    this.logs.clear();
  }

  /** An entity file changed at `change.gen`; `previous` is the project's generation before it. */
  file(projectId: string, previous: number, change: EntityFileChange): void {
    let log = this.logs.get(projectId);
    if (!log) this.logs.set(projectId, (log = { since: previous, files: [] }));
    log.files.push(change);
  }

  /** The changes a task for the project at generation `current` carries. */
  changesOf(projectId: string, current: number): ProjectChanges {
    const log = this.logs.get(projectId);
    return log ? { since: log.since, files: log.files } : { since: current, files: [] };
  }

  /** A thread reports the generation it holds and the projects it evicted; entries every `live` thread has seen drop. */
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
