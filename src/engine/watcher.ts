/**
 * Watches the engine store for changes so cached reads are invalidated (issue: core slice,
 * item 3). The layout is fixed and shallow (engine-format.md), so one non-recursive watch per
 * directory that feeds an entity is enough: `projects/`, each project directory, its
 * `shots/` and `takes/`, and `memory/`. Media and receipts do not change any entity.
 */
import fs from 'node:fs';
import path from 'node:path';

/** What changed: one project, the set of projects, or the memory entries. */
export type StoreChange =
  | { readonly kind: 'project'; readonly projectId: string }
  | { readonly kind: 'projects' }
  | { readonly kind: 'memory' };

const ENTITY_DIRS = new Set(['shots', 'takes']);
const PROJECT_FILES = new Set(['project.json', 'project.yaml']);

export class StoreWatcher {
  private readonly watchers = new Map<string, fs.FSWatcher>();
  private rescanTimer: NodeJS.Timeout | undefined;
  private closed = false;
  private failures = 0;

  constructor(
    private readonly root: string,
    private readonly onChange: (change: StoreChange) => void,
  ) {}

  /** Starts watching. Directories created later are picked up as they appear. */
  start(): void {
    this.rescan();
  }

  /** Number of directories watched, and watch set-ups that failed (reported by system status). */
  get stats(): { readonly directories: number; readonly failures: number } {
    return { directories: this.watchers.size, failures: this.failures };
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.rescanTimer);
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
  }

  private rescan(): void {
    if (this.closed) return;
    this.watch(this.root, (name) => {
      if (name === 'projects' || name === null) this.onChange({ kind: 'projects' });
      if (name === 'memory' || name === null) this.onChange({ kind: 'memory' });
      this.scheduleRescan();
    });
    const projects = path.join(this.root, 'projects');
    this.watch(projects, (name) => {
      this.onChange({ kind: 'projects' });
      if (name !== null) this.onChange({ kind: 'project', projectId: name });
      this.scheduleRescan();
    });
    for (const id of listDirs(projects)) {
      const dir = path.join(projects, id);
      this.watch(dir, (name) => {
        if (name === null || PROJECT_FILES.has(name)) {
          this.onChange({ kind: 'projects' });
          this.onChange({ kind: 'project', projectId: id });
        }
        if (name === null || ENTITY_DIRS.has(name)) {
          this.onChange({ kind: 'project', projectId: id });
          this.scheduleRescan();
        }
      });
      for (const sub of ENTITY_DIRS) {
        this.watch(path.join(dir, sub), (name) => {
          // Dot-files are the dispatch tool's temp files; the rename that follows is reported.
          if (name === null || !name.startsWith('.')) this.onChange({ kind: 'project', projectId: id });
        });
      }
    }
    this.watch(path.join(this.root, 'memory'), () => this.onChange({ kind: 'memory' }));
  }

  private watch(dir: string, handler: (name: string | null) => void): void {
    if (this.watchers.has(dir)) return;
    let w: fs.FSWatcher;
    try {
      w = fs.watch(dir, { persistent: false }, (_event, name) => handler(name === null ? null : String(name)));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') this.failures++;
      return;
    }
    w.on('error', () => {
      // The directory went away (or the watch broke): forget it and look again.
      w.close();
      this.watchers.delete(dir);
      handler(null);
      this.scheduleRescan();
    });
    this.watchers.set(dir, w);
  }

  private scheduleRescan(): void {
    if (this.closed || this.rescanTimer) return;
    this.rescanTimer = setTimeout(() => {
      this.rescanTimer = undefined;
      this.pruneMissing();
      this.rescan();
    }, 50);
    this.rescanTimer.unref();
  }

  private pruneMissing(): void {
    for (const [dir, w] of this.watchers) {
      if (!fs.existsSync(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
  }
}

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
