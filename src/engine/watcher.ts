/**
 * Watches the engine store so cached reads are invalidated: one non-recursive watch per directory
 * that feeds an entity (3 + 3 per project). An inotify watch follows its inode and tools publish
 * folders by rename, so a parent's change re-walks the layout and re-watches replaced directories.
 * The root itself is not followed: replace `projects/` or `memory/`, not the root.
 */
import fs from 'node:fs';
import path from 'node:path';

/** What changed: a shot or take file of a project (by name, as the kernel reports it), a project, the set of projects, the memory entries, or everything. */
export type StoreChange =
  | { readonly kind: 'entity-file'; readonly projectId: string; readonly folder: 'shots' | 'takes'; readonly name: string }
  | { readonly kind: 'project'; readonly projectId: string }
  | { readonly kind: 'projects' }
  | { readonly kind: 'memory' }
  | { readonly kind: 'all' };

/** Figures of the watcher, reported by the system status (`cache`). */
export interface WatcherStats {
  /** Directories watched now: 3 + 3 per project at most. */
  readonly directories: number;
  /** Watch set-ups that failed for another reason than a missing directory (e.g. the inotify limit). */
  readonly failures: number;
  /** Watches closed and set up again because their directory was replaced at the same path. */
  readonly replaced: number;
}

const ENTITY_DIRS = ['shots', 'takes'] as const;
const PROJECT_FILES = new Set(['project.json', 'project.yaml']);
/** Changes come in bursts (a copy, a tool's writes): one walk after this delay settles them all. */
const RESCAN_DELAY_MS = 50;

/** The identity of a directory: what an inotify watch is attached to. */
interface DirIdentity {
  readonly dev: bigint;
  readonly ino: bigint;
}

interface Watch extends DirIdentity {
  readonly fsw: fs.FSWatcher;
}

/** The store's watches; `onChange` is called synchronously as the kernel reports. */
export class StoreWatcher {
  private readonly watches = new Map<string, Watch>();
  private rescanTimer: NodeJS.Timeout | undefined;
  private started = false;
  private closed = false;
  private failures = 0;
  private replaced = 0;

  /** @param root the store root, absolute; @param onChange must not throw. */
  constructor(
    private readonly root: string,
    private readonly onChange: (change: StoreChange) => void,
  ) {}

  /** Directories created or replaced later are picked up as they appear. */
  start(): void {
    this.rescan();
    this.started = true;
  }

  /** Watched directories, failed set-ups, and watches re-created after a replacement. */
  get stats(): WatcherStats {
    return { directories: this.watches.size, failures: this.failures, replaced: this.replaced };
  }

  /** Whether the project's folder and its existing `shots/` and `takes/` are all watched now (a valid id). */
  covers(projectId: string): boolean {
    const dir = path.join(this.root, 'projects', projectId);
    if (!this.watches.has(dir)) return false;
    return ENTITY_DIRS.every((sub) => this.watches.has(path.join(dir, sub)) || identityOf(path.join(dir, sub)) === null);
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.rescanTimer);
    for (const w of this.watches.values()) w.fsw.close();
    this.watches.clear();
  }

  /** Walks the layout: every directory that feeds an entity is watched, by a watch on the directory now at its path. */
  private rescan(): void {
    if (this.closed) return;
    const expected = new Set<string>();
    const projects = path.join(this.root, 'projects');
    const memory = path.join(this.root, 'memory');
    this.ensure(expected, this.root, [{ kind: 'all' }], (name) => {
      // `projects/` replaced (or gone) changes every project at once, not only the list.
      if (name === 'projects' || name === null) this.onChange({ kind: 'all' });
      else if (name === 'memory') this.onChange({ kind: 'memory' });
      this.scheduleRescan();
    });
    this.ensure(expected, projects, [{ kind: 'all' }], (name) => {
      this.onChange({ kind: 'projects' });
      if (name !== null) this.onChange({ kind: 'project', projectId: name });
      else this.onChange({ kind: 'all' });
      this.scheduleRescan();
    });
    for (const id of listDirs(projects)) {
      const dir = path.join(projects, id);
      const project: StoreChange = { kind: 'project', projectId: id };
      this.ensure(expected, dir, [{ kind: 'projects' }, project], (name) => {
        if (name === null || PROJECT_FILES.has(name)) {
          this.onChange({ kind: 'projects' });
          this.onChange(project);
        }
        if (name === null || (ENTITY_DIRS as readonly string[]).includes(name)) {
          this.onChange(project);
          this.scheduleRescan();
        }
      });
      for (const sub of ENTITY_DIRS) {
        this.ensure(expected, path.join(dir, sub), [project], (name) => {
          // One file: only it is read again. Dot-files are the dispatch tool's temp files (the
          // rename that follows is reported). No name: the whole folder.
          if (name === null) this.onChange(project);
          else if (!name.startsWith('.')) this.onChange({ kind: 'entity-file', projectId: id, folder: sub, name });
        });
      }
    }
    this.ensure(expected, memory, [{ kind: 'memory' }], () => this.onChange({ kind: 'memory' }));
    // Folders the layout no longer has (a project removed, or moved out of `projects/`).
    for (const [dir, w] of this.watches) {
      if (!expected.has(dir)) {
        w.fsw.close();
        this.watches.delete(dir);
      }
    }
  }

  /** Watches `dir` by the directory now at that path, replacing a stale watch; a new one reports `scope` changed (after start-up). */
  private ensure(expected: Set<string>, dir: string, scope: readonly StoreChange[], handler: (name: string | null) => void): void {
    expected.add(dir);
    const id = identityOf(dir);
    const current = this.watches.get(dir);
    if (current && id && sameIdentity(current, id)) return;
    if (current) {
      current.fsw.close();
      this.watches.delete(dir);
    }
    if (!id) return;
    let fsw: fs.FSWatcher;
    try {
      fsw = fs.watch(dir, { persistent: false }, (_event, name) => handler(name === null ? null : String(name)));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.failures++;
      return;
    }
    // The identity read before the watch was set: if the folder was replaced in between, the
    // watch is on the newer one, the record on the older, and the next walk sets it up again.
    const watch: Watch = { fsw, dev: id.dev, ino: id.ino };
    fsw.on('error', () => {
      // The directory went away (or the watch broke): forget it and look again.
      fsw.close();
      if (this.watches.get(dir) === watch) this.watches.delete(dir);
      handler(null);
      this.scheduleRescan();
    });
    this.watches.set(dir, watch);
    if (current) this.replaced++;
    if (this.started) for (const c of scope) this.onChange(c);
    const after = identityOf(dir);
    if (!after || !sameIdentity(after, id)) this.scheduleRescan();
  }

  private scheduleRescan(): void {
    if (this.closed || this.rescanTimer) return;
    this.rescanTimer = setTimeout(() => {
      this.rescanTimer = undefined;
      this.rescan();
    }, RESCAN_DELAY_MS);
    this.rescanTimer.unref();
  }
}

/** The identity of the directory at `dir` (symbolic links followed, as inotify follows them), or null. */
function identityOf(dir: string): DirIdentity | null {
  try {
    const st = fs.statSync(dir, { bigint: true, throwIfNoEntry: false });
    return st?.isDirectory() ? { dev: st.dev, ino: st.ino } : null;
  } catch {
    return null; // ENOTDIR, EACCES…: nothing to watch there
  }
}

const sameIdentity = (a: DirIdentity, b: DirIdentity): boolean => a.dev === b.dev && a.ino === b.ino;

/** Project directories, without dot-named ones (where tools stage a copy before renaming it into place). */
function listDirs(dir: string): string[] {
  try {
    return fs
      .readdirSync(dir, { withFileTypes: true })
      .filter((d) => d.isDirectory() && !d.name.startsWith('.'))
      .map((d) => d.name);
  } catch {
    return [];
  }
}
