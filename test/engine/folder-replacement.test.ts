/**
 * Folder replacement: the store cache follows folders that sync and deploy
 * tools publish by rename. Through the real server on port 0, with a temp copy of the sample
 * store: a project folder, its `shots/` or `takes/`, `memory/`, or `projects/` itself is
 * replaced the ways such tools replace folders (moved away then the new one moved in; renamed
 * over the emptied old folder; exchanged atomically with renameat2 RENAME_EXCHANGE, through
 * python3, which the build already needs). The routes must show the new folder's content,
 * then every later edit inside it; the watches must be exactly the folders at their paths
 * (system status `cache.watchedDirectories`, and the kernel's own list of inotify watches of
 * this process). Polls have a ceiling, not a timing: an edit the watcher misses is never seen.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function getJson(p: string): Promise<any> {
  const res = await (t as TestService).get(p);
  expect(res.status, p).toBe(200);
  return res.json();
}

const beatIds = async (project = P, episode = 1): Promise<string[]> => ((await getJson(`/api/projects/${project}/episodes/${episode}/scenes/main/beats`)) as { id: string }[]).map((b) => b.id);
const takeIds = async (beat: string, project = P): Promise<string[]> => ((await getJson(`/api/beats/${beat}/takes?projectId=${project}`)) as { take_id: string }[]).map((x) => x.take_id);
const episodeIds = async (project = P): Promise<string[]> => ((await getJson(`/api/projects/${project}/episodes`)) as { id: string }[]).map((e) => e.id);
const memoryIds = async (): Promise<string[]> => ((await getJson('/api/memory')) as { id: string }[]).map((m) => m.id);
const projectIds = async (): Promise<string[]> => ((await getJson('/api/projects')) as { id: string }[]).map((p) => p.id);

/**
 * Polls until `probe` holds; fails past the ceiling (waitFor's: an edit missed by the watcher
 * never shows) naming what never showed.
 */
async function shows(what: string, probe: () => Promise<boolean>): Promise<void> {
  await waitFor(async () => ((await probe()) ? true : undefined), what);
}

const readJson = (file: string): Record<string, unknown> => JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
const writeJson = (file: string, v: unknown) => fs.writeFileSync(file, JSON.stringify(v, null, 2));
function editJson(file: string, edit: (d: Record<string, unknown>) => void): void {
  const d = readJson(file);
  edit(d);
  writeJson(file, d);
}

/** `a` and `b` swap places in one step (renameat2 with RENAME_EXCHANGE), as atomic publishers do. */
function exchange(a: string, b: string): void {
  const script = [
    'import ctypes, os, sys',
    'libc = ctypes.CDLL(None, use_errno=True)',
    'if libc.renameat2(-100, sys.argv[1].encode(), -100, sys.argv[2].encode(), 2) != 0:',
    '    e = ctypes.get_errno(); raise OSError(e, os.strerror(e))',
  ].join('\n');
  execFileSync('python3', ['-c', script, a, b], { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** How a folder at `target` is replaced by the prepared folder `fresh` (a dot-named sibling). */
const REPLACE: Record<string, (fresh: string, target: string) => void> = {
  // rsync --delay-updates, deploy scripts: the old folder moved away, then the new one moved in.
  'moved away, then the new folder moved in': (fresh, target) => {
    fs.renameSync(target, `${path.dirname(target)}/.${path.basename(target)}.old`);
    fs.renameSync(fresh, target);
  },
  // rename(2) replaces an empty directory: the old inode is freed, the path stays.
  'renamed over the emptied old folder': (fresh, target) => {
    for (const name of fs.readdirSync(target)) fs.rmSync(path.join(target, name), { recursive: true, force: true });
    fs.renameSync(fresh, target);
  },
  // The atomic swap: readers never see the path missing; the old folder lives on beside it.
  'exchanged atomically (RENAME_EXCHANGE)': (fresh, target) => exchange(fresh, target),
};

/** Copies `dir` to a dot-named sibling (ignored by the store while it is prepared) and returns its path. */
function stage(dir: string): string {
  const fresh = path.join(path.dirname(dir), `.${path.basename(dir)}.new`);
  fs.cpSync(dir, fresh, { recursive: true });
  return fresh;
}

/** The directories the watcher must watch, by the layout, with their inodes now. */
function expectedDirs(root: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  const add = (d: string) => {
    const st = fs.statSync(d, { bigint: true, throwIfNoEntry: false });
    if (st?.isDirectory()) out.set(d, st.ino);
  };
  add(root);
  add(path.join(root, 'projects'));
  add(path.join(root, 'memory'));
  const projects = path.join(root, 'projects');
  for (const d of fs.readdirSync(projects, { withFileTypes: true })) {
    if (!d.isDirectory() || d.name.startsWith('.')) continue;
    add(path.join(projects, d.name));
    for (const sub of ['shots', 'takes']) add(path.join(projects, d.name, sub));
  }
  return out;
}

/** Inodes of every inotify watch this process holds, as the kernel lists them (/proc/self/fdinfo). */
function kernelWatchedInodes(): bigint[] {
  const out: bigint[] = [];
  for (const fd of fs.readdirSync('/proc/self/fdinfo')) {
    let info: string;
    try {
      info = fs.readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8');
    } catch {
      continue; // closed meanwhile
    }
    for (const m of info.matchAll(/^inotify wd:\S+ ino:([0-9a-f]+) /gm)) out.push(BigInt(`0x${m[1]}`));
  }
  return out.sort();
}

/**
 * The watches are exactly the folders now at their paths: as many as the layout has (the
 * system status), and the kernel watches those inodes and no other (none left on a replaced
 * folder, none missing).
 */
async function expectWatchesMatchLayout(): Promise<void> {
  const s = t as TestService;
  const expected = expectedDirs(s.dataDir);
  // The walk after a change is debounced: wait for it (a ceiling), then compare exactly.
  await waitFor(async () => {
    const st = await getJson('/api/system-status');
    const kernel = kernelWatchedInodes();
    return st.cache.watchedDirectories === expected.size && kernel.length === expected.size ? true : undefined;
  }, 'the watches to settle').catch(() => undefined);
  const status = await getJson('/api/system-status');
  expect(status.cache.watchedDirectories).toBe(expected.size);
  expect(kernelWatchedInodes()).toEqual([...expected.values()].sort());
}

describe.each(Object.keys(REPLACE))('a project folder %s', (how) => {
  it('shows the new folder at once, then every edit inside it (beats, takes, episodes)', async () => {
    t = await startTestService();
    const project = path.join(t.dataDir, 'projects', P);
    // Cached answers of the old folder.
    expect(await beatIds()).toEqual(['b01', 'b03', 'b02']);
    expect(await takeIds('b03')).toEqual([]);
    expect(await episodeIds()).toEqual(['1', '2']);

    const fresh = stage(project);
    editJson(path.join(fresh, 'shots', 'sh010.json'), (d) => (d.beat_id = 'b00-published'));
    REPLACE[how]!(fresh, project);
    await shows('the published folder', async () => (await beatIds()).includes('b00-published'));

    // Edits inside the new folder, as a tool or a person makes them afterwards.
    editJson(path.join(project, 'shots', 'sh020.json'), (d) => (d.beat_id = 'b00-edited'));
    await shows('a shot edited in the new folder', async () => (await beatIds()).includes('b00-edited'));
    writeJson(path.join(project, 'takes', 'tk_0901.json'), { take_id: 'tk_0901', shot_id: 'sh060', parent_take_id: null });
    await shows('a take written in the new folder', async () => (await takeIds('b03')).includes('tk_0901'));
    editJson(path.join(project, 'shots', 'sh110.json'), (d) => (d.episode = 9));
    await shows('an episode made in the new folder', async () => (await episodeIds()).includes('9'));
    await expectWatchesMatchLayout();
  });
});

describe.each(['shots', 'takes'])('a project’s %s/ folder replaced', (sub) => {
  it.each(Object.keys(REPLACE))('%s: shows the new folder, then every edit inside it', async (how) => {
    t = await startTestService();
    const dir = path.join(t.dataDir, 'projects', P, sub);
    expect(await beatIds()).toEqual(['b01', 'b03', 'b02']);
    expect(await takeIds('b03')).toEqual([]);

    const fresh = stage(dir);
    if (sub === 'shots') editJson(path.join(fresh, 'sh010.json'), (d) => (d.beat_id = 'b00-published'));
    else writeJson(path.join(fresh, 'tk_0900.json'), { take_id: 'tk_0900', shot_id: 'sh060', parent_take_id: null });
    REPLACE[how]!(fresh, dir);
    if (sub === 'shots') await shows('the published shots', async () => (await beatIds()).includes('b00-published'));
    else await shows('the published takes', async () => (await takeIds('b03')).includes('tk_0900'));

    if (sub === 'shots') {
      editJson(path.join(dir, 'sh020.json'), (d) => (d.beat_id = 'b00-edited'));
      await shows('a shot edited in the new folder', async () => (await beatIds()).includes('b00-edited'));
    } else {
      writeJson(path.join(dir, 'tk_0901.json'), { take_id: 'tk_0901', shot_id: 'sh060', parent_take_id: 'tk_0900' });
      await shows('a take written in the new folder', async () => (await takeIds('b03')).includes('tk_0901'));
    }
    await expectWatchesMatchLayout();
  });
});

describe('memory/ replaced', () => {
  it.each(Object.keys(REPLACE))('%s: shows the new entries, then every edit inside the new folder', async (how) => {
    t = await startTestService();
    const dir = path.join(t.dataDir, 'memory');
    expect(await memoryIds()).toEqual(['handheld-only', 'mara-wardrobe', 'style-palette']);

    const fresh = stage(dir);
    writeJson(path.join(fresh, 'published-entry.json'), { id: 'published-entry', text: 'From the publisher.' });
    REPLACE[how]!(fresh, dir);
    await shows('the published entries', async () => (await memoryIds()).includes('published-entry'));

    writeJson(path.join(dir, 'edited-entry.json'), { id: 'edited-entry', text: 'Written afterwards.' });
    await shows('an entry written in the new folder', async () => (await memoryIds()).includes('edited-entry'));
    fs.rmSync(path.join(dir, 'style-palette.json'));
    await shows('an entry removed from the new folder', async () => !(await memoryIds()).includes('style-palette'));
    await expectWatchesMatchLayout();
  });
});

describe('projects/ replaced', () => {
  it.each(Object.keys(REPLACE))('%s: shows the new projects at once, then every edit inside them', async (how) => {
    t = await startTestService();
    const dir = path.join(t.dataDir, 'projects');
    expect(await projectIds()).toEqual(['harbor-lights', 'night-market']);
    expect(await beatIds()).toEqual(['b01', 'b03', 'b02']);
    expect(await beatIds('night-market')).toHaveLength(2);

    const fresh = stage(dir);
    editJson(path.join(fresh, P, 'shots', 'sh010.json'), (d) => (d.beat_id = 'b00-published'));
    fs.rmSync(path.join(fresh, 'night-market'), { recursive: true });
    REPLACE[how]!(fresh, dir);
    // Every project changed at once, not only the list: night-market's cached beats go too.
    await shows('the published projects', async () => (await beatIds()).includes('b00-published'));
    await shows('a project the new folder does not have', async () => (await (t as TestService).get('/api/projects/night-market')).status === 404);
    expect((await (t as TestService).get('/api/projects/night-market/episodes/1/scenes/main/beats')).status).toBe(404);

    editJson(path.join(dir, P, 'shots', 'sh020.json'), (d) => (d.beat_id = 'b00-edited'));
    await shows('a shot edited in the new folder', async () => (await beatIds()).includes('b00-edited'));
    writeJson(path.join(dir, P, 'takes', 'tk_0901.json'), { take_id: 'tk_0901', shot_id: 'sh060', parent_take_id: null });
    await shows('a take written in the new folder', async () => (await takeIds('b03')).includes('tk_0901'));
    // A project created in the new folder, then edited.
    const added = path.join(dir, 'fresh-project');
    fs.mkdirSync(path.join(added, 'shots'), { recursive: true });
    writeJson(path.join(added, 'project.json'), { format: 2, id: 'fresh-project', title: 'Fresh' });
    await shows('a project created in the new folder', async () => (await projectIds()).includes('fresh-project'));
    writeJson(path.join(added, 'shots', 'sh001.json'), { shot_id: 'sh001', episode: 1, beat_id: 'b-first', order: 1 });
    await shows('a shot of the new project', async () => (await (t as TestService).get('/api/projects/fresh-project/episodes/1/scenes/main/beats')).status === 200);
    await expectWatchesMatchLayout();
  });
});

describe('many replacements', () => {
  it('keeps one watch per folder of the layout: none left on replaced folders (system status and kernel agree)', async () => {
    t = await startTestService();
    const project = path.join(t.dataDir, 'projects', P);
    const rounds = 30;
    const hows = Object.keys(REPLACE);
    for (let i = 0; i < rounds; i++) {
      // Keep the replaced folders around (a moved-away folder, an exchanged one), under fresh names.
      for (const old of ['.harbor-lights.old', '.harbor-lights.new']) {
        const p = path.join(t.dataDir, 'projects', old);
        if (fs.existsSync(p)) fs.renameSync(p, path.join(t.dataDir, 'projects', `.kept-${i}-${old.slice(1)}`));
      }
      const fresh = stage(project);
      editJson(path.join(fresh, 'shots', 'sh010.json'), (d) => (d.beat_id = `b00-round-${i}`));
      const how = hows[i % hows.length] as string;
      REPLACE[how]!(fresh, project);
      await shows(`round ${i}`, async () => (await beatIds()).includes(`b00-round-${i}`));
      editJson(path.join(project, 'shots', 'sh020.json'), (d) => (d.beat_id = `b00-edit-${i}`));
      await shows(`the edit of round ${i}`, async () => (await beatIds()).includes(`b00-edit-${i}`));
    }
    await expectWatchesMatchLayout();
    const status = await getJson('/api/system-status');
    console.log(
      `folder replacement: ${rounds} replacements of ${P}; watched directories ${status.cache.watchedDirectories} (3 + 3 per project), watches re-created ${status.cache.watchesReplaced}, failures ${status.cache.watchFailures}`,
    );
    expect(status.cache.watchFailures).toBe(0);
    // The figures are described in the OpenAPI document.
    const doc = JSON.stringify((await getJson('/api/openapi.json')).paths['/api/system-status'].get.responses['200']);
    for (const figure of ['watchedDirectories', 'watchFailures', 'watchesReplaced']) expect(doc).toContain(figure);
  });
});
