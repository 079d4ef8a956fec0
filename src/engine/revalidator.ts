/**
 * Revalidation of a store on a shared folder, where remote writes raise no notifications
 * (cluster.md §Switching it on): folders are `stat`ed every `intervalMs`; a folder's mtime moves
 * on add, remove or rename (how the dispatch tool writes); in-place rewrites are not seen.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { StoreChange } from './watcher.js';

/** What identifies a file's or folder's version: inode, size and modification time. */
type Signature = string;

async function signatureOf(p: string): Promise<Signature> {
  try {
    const s = await fs.promises.stat(p, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (err) {
    return `missing:${(err as NodeJS.ErrnoException).code ?? ''}`;
  }
}

/** Looks at the store every `intervalMs` and reports what changed (see the module's comment). */
export class StoreRevalidator {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | null = null;
  private readonly seen = new Map<string, Signature>();
  private passes = 0;

  /** @param root the store's real path; @param onChange told of each change, as the watcher tells it. */
  constructor(
    private readonly root: string,
    private readonly intervalMs: number,
    private readonly onChange: (c: StoreChange) => void,
  ) {}

  /** Revalidation passes done since start (system status). */
  get count(): number {
    return this.passes;
  }

  start(): void {
    this.timer = setInterval(() => {
      this.running ??= this.pass().finally(() => {
        this.running = null;
      });
    }, this.intervalMs);
    this.timer.unref();
    void this.pass();
  }

  /** One look at the store; resolves once every change it found was reported. */
  async pass(): Promise<void> {
    const first = this.passes === 0;
    const projectsDir = path.join(this.root, 'projects');
    if (await this.changed(projectsDir)) this.report(first, { kind: 'projects' });
    if (await this.changed(path.join(this.root, 'memory'))) this.report(first, { kind: 'memory' });
    let ids: string[] = [];
    try {
      ids = (await fs.promises.readdir(projectsDir, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      // No projects folder: nothing more to look at.
    }
    for (const id of ids) {
      const dir = path.join(projectsDir, id);
      const looks = await Promise.all([dir, path.join(dir, 'project.json'), path.join(dir, 'shots'), path.join(dir, 'takes')].map((p) => this.changed(p)));
      if (looks.some(Boolean)) this.report(first, { kind: 'project', projectId: id });
    }
    this.passes++;
  }

  /** Whether `p` changed since the last look (a first look is a change). */
  private async changed(p: string): Promise<boolean> {
    const sig = await signatureOf(p);
    const before = this.seen.get(p);
    this.seen.set(p, sig);
    return before !== sig;
  }

  private report(first: boolean, c: StoreChange): void {
    if (!first) this.onChange(c);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
