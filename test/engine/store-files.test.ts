/**
 * Reading the engine store safely, through the real server on
 * port 0 with real files: for every kind of hostile file (test/helpers/
 * hostile-files.ts: a named pipe, a socket, a device, a folder, links to /etc/passwd, to the
 * state database and to another project through `..`, a link loop, a file past the byte
 * bound, JSON nested 100,000 levels deep, text with a sentinel) standing as a project file, a
 * shot, a take, a memory entry and a media file:
 *
 * - the service starts (a named pipe as project.json used to hang start-up before listen);
 * - the entity routes of that project answer 422 with the MissingCanonicalField detail naming
 *   the store-relative file and the reason; media answers 404 naming only the file; take
 *   actions and memory toggles answer 422 for a file they cannot use;
 * - the other projects are served as before, and the project list leaves the bad ones out
 *   with a warning event each;
 * - no answer and no event quotes a file's contents or a path beyond the store.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { closeSockets, HOSTILE_KINDS, leaks, MKNOD, removeAt, TEST_MAX_BYTES, type HostileKind, type PlantSite } from '../helpers/hostile-files.js';

const P = 'harbor-lights';
const SHOT = { shot_id: 'sh010', episode: 1, beat_id: 'b01', order: 10 };
const TAKE = { take_id: 'tk_0001', shot_id: 'sh010', parent_take_id: null };
const MEMORY = { id: 'zz-hostile', text: 'x', enabled: true, project_id: null };

let t: TestService;
/** Every answer body and event, scanned for leaks at the end. */
const seen: string[] = [];

const entityRoutes = (p: string) => [
  `/api/projects/${p}/episodes`,
  `/api/projects/${p}/episodes/1/scenes`,
  `/api/projects/${p}/episodes/1/scenes/main/beats`,
  `/api/beats/b01/takes?projectId=${p}`,
  `/api/beats/b01/lineage?projectId=${p}`,
];

async function get(p: string): Promise<{ status: number; body: any; text: string }> {
  const res = await t.get(p);
  const text = await res.text();
  seen.push(text);
  return { status: res.status, body: text.startsWith('{') || text.startsWith('[') ? JSON.parse(text) : text, text };
}

async function post(p: string, body: unknown): Promise<{ status: number; body: any }> {
  const res = await t.post(p, body);
  const text = await res.text();
  seen.push(text);
  return { status: res.status, body: JSON.parse(text) };
}

/** Copies harbor-lights as project `id` of the store. */
function copyProject(dataDir: string, id: string): void {
  const dir = path.join(dataDir, 'projects', id);
  fs.cpSync(path.join(dataDir, 'projects', P), dir, { recursive: true });
  const pj = path.join(dir, 'project.json');
  fs.writeFileSync(pj, JSON.stringify({ ...JSON.parse(fs.readFileSync(pj, 'utf8')), id }));
}

/** The 422 detail for `file` (store-relative) with the kind's reason. */
function expectUnreadable(detail: any, kind: HostileKind, projectId: string | null, field: string, file: string, where: string): void {
  expect(detail, where).toMatchObject({ error: 'missing_canonical_field', field, project_id: projectId, fix_cli: expect.any(String) });
  expect(detail.remediation, where).toContain(` in ${file};`);
  expect(detail.remediation, where).toMatch(kind.why);
}

beforeAll(async () => {
  const { tmp, dataDir } = makeTempStore();
  const stateDir = path.join(tmp, 'state');
  fs.mkdirSync(stateDir, { recursive: true });
  const site = (file: string, doc: Record<string, unknown>, otherTarget: string): PlantSite => ({ file, doc, otherTarget, stateDir });
  // Copies first: harbor-lights' media folder gets hostile files below.
  for (const kind of HOSTILE_KINDS) for (const prefix of ['pj', 'sh', 'tk']) copyProject(dataDir, `${prefix}-${kind.name}`);
  const at = (...parts: string[]) => path.join(dataDir, 'projects', ...parts);
  for (const kind of HOSTILE_KINDS) {
    // A project whose project.json is the hostile file, one with a hostile shot, one with a hostile take.
    removeAt(at(`pj-${kind.name}`, 'project.json'));
    await kind.plant(site(at(`pj-${kind.name}`, 'project.json'), { format: 2, id: `pj-${kind.name}`, title: 'T' }, `../${P}/project.json`));
    removeAt(at(`sh-${kind.name}`, 'shots', 'sh010.json'));
    await kind.plant(site(at(`sh-${kind.name}`, 'shots', 'sh010.json'), SHOT, `../../${P}/shots/sh010.json`));
    removeAt(at(`tk-${kind.name}`, 'takes', 'tk_0001.json'));
    await kind.plant(site(at(`tk-${kind.name}`, 'takes', 'tk_0001.json'), TAKE, `../../${P}/takes/tk_0001.json`));
    if (kind.media) await kind.plant(site(at(P, 'media', `${kind.name}.png`), {}, '../../night-market/media/tk_0001.svg'));
  }
  // Entries of projects/ that are not project folders: they affect nothing but themselves.
  execFileSync('mkfifo', [path.join(dataDir, 'projects', 'fifo-entry')]);
  fs.symlinkSync('loop-entry', path.join(dataDir, 'projects', 'loop-entry'));
  fs.symlinkSync(P, path.join(dataDir, 'projects', 'alias'));
  t = await startTestService({ tmp, env: { CONSOLE_STORE_FILE_MAX_BYTES: String(TEST_MAX_BYTES) } });
});

afterAll(async () => {
  await t?.close();
  await closeSockets();
});

describe('a hostile project.json', () => {
  it.each(HOSTILE_KINDS.map((k) => [k.name, k] as const))('%s: the project and every entity route answer 422 naming projects/<id>/project.json', async (_n, kind) => {
    const id = `pj-${kind.name}`;
    const file = `projects/${id}/project.json`;
    const project = await get(`/api/projects/${id}`);
    expect(project.status, project.text).toBe(422);
    expectUnreadable(project.body.detail, kind, id, 'format', file, id);
    for (const route of entityRoutes(id)) {
      const r = await get(route);
      expect(r.status, route).toBe(422);
      expectUnreadable(r.body.detail, kind, id, 'format', file, route);
    }
  });

  it('leaves them out of the list with one warning event each; every other project is listed', async () => {
    const list = await get('/api/projects');
    expect(list.status).toBe(200);
    const ids = list.body.map((p: any) => p.id);
    for (const kind of HOSTILE_KINDS) {
      expect(ids).not.toContain(`pj-${kind.name}`);
      expect(ids).toEqual(expect.arrayContaining([`sh-${kind.name}`, `tk-${kind.name}`]));
    }
    expect(ids).toEqual(expect.arrayContaining([P, 'night-market']));
    // Links and pipes under projects/ are not project folders: never listed.
    for (const other of ['fifo-entry', 'loop-entry', 'alias']) expect(ids).not.toContain(other);
    const warned = (await allEvents(t.url, 'severities=warning&scopePrefix=engine/projects')).map((e) => e.payload.project_id);
    for (const kind of HOSTILE_KINDS)
      expect(
        warned.filter((w) => w === `pj-${kind.name}`),
        kind.name,
      ).toHaveLength(1);
  });

  it('answers for odd entries of projects/ about that entry only: a pipe is no project, a link loop and a link to another project are 422', async () => {
    expect((await get('/api/projects/fifo-entry')).status).toBe(404);
    const loop = await get('/api/projects/loop-entry');
    expect(loop.status).toBe(422);
    expect(loop.body.detail.remediation).toMatch(/cannot be read \(a symbolic link loop.* in projects\/loop-entry\/project\.json;/);
    const alias = await get('/api/projects/alias');
    expect(alias.status).toBe(422);
    expect(alias.body.detail.remediation).toMatch(/cannot be read \(a symbolic link leading outside projects\/alias\) in projects\/alias\/project\.json;/);
    expect((await get(`/api/projects/${P}`)).status).toBe(200);
  });
});

describe('a hostile shot or take file', () => {
  it.each(HOSTILE_KINDS.map((k) => [k.name, k] as const))('%s: every entity route of that project answers 422 naming the file; the project itself is served', async (_n, kind) => {
    for (const [prefix, field, file] of [
      ['sh', 'shot_id', 'shots/sh010.json'],
      ['tk', 'take_id', 'takes/tk_0001.json'],
    ] as const) {
      const id = `${prefix}-${kind.name}`;
      expect((await get(`/api/projects/${id}`)).status).toBe(200);
      for (const route of entityRoutes(id)) {
        const r = await get(route);
        expect(r.status, route).toBe(422);
        expectUnreadable(r.body.detail, kind, id, field, `projects/${id}/${file}`, route);
      }
    }
    // Other projects are not affected.
    expect((await get(`/api/projects/${P}/episodes`)).status).toBe(200);
  });

  it.each(HOSTILE_KINDS.map((k) => [k.name, k] as const))('%s: a take action checks the take file on disk safely', async (_n, kind) => {
    const id = `tk-${kind.name}`;
    const file = `projects/${id}/takes/tk_0001.json`;
    const circled = await post('/api/takes/tk_0001/action', { projectId: id, action: 'circled_toggled' });
    if (kind.level === 'file') {
      // A file that cannot be used at all: not "on disk", not absent either.
      expect(circled.status, JSON.stringify(circled.body)).toBe(422);
      expectUnreadable(circled.body.detail, kind, id, 'shot_id', file, 'circled_toggled');
    } else {
      // Present, with contents that are not a take: recorded as on disk, as before.
      expect(circled.status, JSON.stringify(circled.body)).toBe(200);
      expect(circled.body.onDisk).toBe(true);
    }
    const primary = await post('/api/takes/tk_0001/action', { projectId: id, action: 'marked_primary' });
    expect(primary.status).toBe(422);
    expectUnreadable(primary.body.detail, kind, id, 'shot_id', file, 'marked_primary');
  });
});

describe('a hostile media file', () => {
  it.each(HOSTILE_KINDS.filter((k) => k.media).map((k) => [k.name] as const))('%s: 404 naming only the file', async (name) => {
    const r = await get(`/api/media/${P}/${name}.png`);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ detail: `no media file ${name}.png in project ${P}`, code: 'media_not_found' });
  });

  it('still serves a regular media file, with ranges', async () => {
    const whole = await t.get(`/api/media/${P}/tk_0001.svg`);
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('image/svg+xml');
    expect(await whole.text()).toBe(fs.readFileSync(path.join(t.dataDir, 'projects', P, 'media', 'tk_0001.svg'), 'utf8'));
    const part = await t.get(`/api/media/${P}/tk_0001.svg`, { headers: { Range: 'bytes=0-4' } });
    expect(part.status).toBe(206);
    expect(await part.text()).toHaveLength(5);
  });
});

describe('a hostile memory entry', () => {
  // One file name per kind: each is a new file to the store, reported by its own warning event.
  it.each(HOSTILE_KINDS.map((k) => [k.name, k] as const))('%s: GET /api/memory leaves it out, with a warning event naming it; a toggle checks the file safely', async (_n, kind) => {
    const entry = `zz-${kind.name}`;
    const rel = `memory/${entry}.json`;
    const file = path.join(t.dataDir, rel);
    removeAt(file);
    await closeSockets();
    const since = String(t.service.deps.bus.lastId);
    await kind.plant({ file, doc: { ...MEMORY, id: entry }, otherTarget: `../projects/${P}/project.json`, stateDir: t.stateDir });
    // The watcher sees the change; the answer follows (the ceiling only bounds the wait).
    const event = await waitFor(async () => {
      const m = await get('/api/memory');
      expect(m.status).toBe(200);
      return (await allEvents(t.url, 'scopePrefix=engine/memory', since)).find((e) => e.payload.file === rel && kind.why.test(e.detail ?? ''));
    }, `a warning event for the ${kind.name} entry`);
    expect(event).toMatchObject({ severity: 'warning', summary: expect.stringMatching(new RegExp(`^memory entry skipped: ${rel} \\(canonical field id cannot be read`)) });
    // The event carries the detail the 422 carried.
    const p = event.payload as { field: string; project_id: string | null; fix_cli: string };
    expectUnreadable({ error: 'missing_canonical_field', field: p.field, project_id: p.project_id, fix_cli: p.fix_cli, remediation: event.detail }, kind, null, 'id', rel, 'memory');
    const listed = (await get('/api/memory')).body.map((m: { id: string }) => m.id);
    expect(listed).toEqual(expect.arrayContaining(['handheld-only', 'mara-wardrobe', 'style-palette']));
    expect(listed).not.toContain(entry);
    const toggle = await post(`/api/memory/${entry}/toggle`, { on: false });
    if (kind.level === 'file') {
      expect(toggle.status).toBe(422);
      expectUnreadable(toggle.body.detail, kind, null, 'id', rel, 'toggle');
    } else {
      expect(toggle.status).toBe(200);
    }
    removeAt(file);
    await closeSockets();
  });
});

describe('what leaves the service', () => {
  it('never quotes a file: no answer and no event holds the sentinel, /etc/passwd, the database or a path beyond the store', async () => {
    const events = await allEvents(t.url);
    const all = [...seen, ...events.map((e) => JSON.stringify(e))];
    const found = all.flatMap((text) => leaks(text, t.tmp).map((l) => `${l} in ${text.slice(0, 200)}`));
    console.log(`store-files: ${seen.length} answers and ${events.length} events scanned, ${found.length} leaks; device node case ${MKNOD ? 'run' : 'NOT run (mknod refused here)'}`);
    expect(found).toEqual([]);
    expect(seen.length).toBeGreaterThan(100);
  });

  it('reports every bound in the system status', async () => {
    const s = await get('/api/system-status');
    expect(s.body.limits).toMatchObject({ CONSOLE_STORE_FILE_MAX_BYTES: TEST_MAX_BYTES, CONSOLE_STORE_JSON_MAX_DEPTH: 64, CONSOLE_STORE_READ_TIMEOUT_MS: 30_000 });
  });
});

describe('the store folders themselves', () => {
  it('starts with projects/ a link loop and memory/ a named pipe: an empty list with a warning, a 422 naming memory', async () => {
    const { tmp, dataDir } = makeTempStore('empty');
    fs.rmSync(path.join(dataDir, 'projects'), { recursive: true });
    fs.symlinkSync('projects', path.join(dataDir, 'projects'));
    execFileSync('mkfifo', [path.join(dataDir, 'memory')]);
    const u = await startTestService({ tmp });
    try {
      const list = await u.get('/api/projects');
      expect(list.status).toBe(200);
      expect(await list.json()).toEqual([]);
      const warned = (await allEvents(u.url, 'severities=warning&scopePrefix=engine/projects')).map((e) => e.summary);
      expect(warned).toEqual([expect.stringMatching(/^projects\/ cannot be listed \(a symbolic link loop/)]);
      expect((await u.get('/api/projects/anything')).status).toBe(422);
      const memory = await u.get('/api/memory');
      expect(memory.status).toBe(422);
      const detail = ((await memory.json()) as any).detail;
      expect(detail).toMatchObject({ error: 'missing_canonical_field', field: 'id', project_id: null });
      expect(detail.remediation).toMatch(/cannot be read \(not a folder\) in memory;/);
      expect((await u.get('/api/health')).status).toBe(200);
    } finally {
      await u.close();
    }
  });
});
