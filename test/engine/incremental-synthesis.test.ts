/**
 * Incremental re-synthesis through the real service: one take file landing as
 * a job writes it (a dot-named temp file renamed into `takes/`) is read alone, not with the
 * project's other files (`cache.filesRead` in the system status grows by one, the project is
 * not read whole), and every answer then equals a full re-synthesis of the project. A real
 * generation job's take is seen the same way: its exit no longer marks the project stale whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadProjectIndex } from '../../src/engine/project-index.js';
import { storeAccess } from '../../src/engine/read-store-file.js';
import { synthesize, type SynthesisQuery } from '../../src/engine/synthesize.js';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
/** Takes added to the sample project before the start, so that a whole read is unmistakable. */
const EXTRA_TAKES = 200;
let t: TestService;
let store: { tmp: string; dataDir: string };

interface CacheStats {
  filesRead: number;
  projectReads: number;
  projectPatches: number;
}
const cacheStats = async (): Promise<CacheStats> => ((await (await t.get('/api/system-status')).json()) as { cache: CacheStats }).cache;
const json = async (p: string): Promise<unknown> => {
  const r = await t.get(p);
  expect(r.status, p).toBe(200);
  return r.json();
};
const takesDir = () => path.join(store.dataDir, 'projects', P, 'takes');

beforeAll(async () => {
  store = makeTempStore();
  for (let i = 0; i < EXTRA_TAKES; i++) {
    const id = `tk_x${String(i).padStart(4, '0')}`;
    fs.writeFileSync(path.join(takesDir(), `${id}.json`), JSON.stringify({ take_id: id, shot_id: 'sh020', parent_take_id: null, created_at: '2026-10-01T00:00:00Z' }));
  }
  t = await startTestService({ store: { dir: store.dataDir } });
});
afterAll(async () => {
  await t.close();
  fs.rmSync(store.tmp, { recursive: true, force: true });
});

/** Every answer of the project as the service gives it, and as a full read of the store gives it now. */
async function compareWithFullRead(): Promise<void> {
  const index = loadProjectIndex(storeAccess(store.dataDir, { fileMaxBytes: t.config.store.fileMaxBytes, jsonMaxDepth: t.config.store.jsonMaxDepth }), P);
  const full = (q: SynthesisQuery) => {
    const r = synthesize(index, q, {});
    if (!r.ok) throw new Error(`full read: ${JSON.stringify(r.error)}`);
    return JSON.parse(Buffer.from(r.body).toString()) as unknown;
  };
  expect(await json(`/api/projects/${P}/episodes`)).toEqual(full({ kind: 'episodes' }));
  expect(await json(`/api/projects/${P}/episodes/1/scenes/main/beats`)).toEqual(full({ kind: 'beats', episodeId: '1', sceneId: 'main' }));
  for (const beatId of ['b01', 'b02', 'b03', 'b04', 'b05']) {
    expect(await json(`/api/beats/${beatId}/takes?projectId=${P}`)).toEqual(full({ kind: 'takes', beatId }));
    expect(await json(`/api/beats/${beatId}/lineage?projectId=${P}`)).toEqual(full({ kind: 'lineage', beatId, takeId: null }));
  }
}

it('reads one landed take file alone, and answers as a full re-synthesis', async () => {
  await compareWithFullRead(); // every answer cached, the project read once
  const before = await cacheStats();
  expect(before.projectReads).toBe(1);
  expect(before.filesRead).toBeGreaterThan(EXTRA_TAKES);

  // As the dispatch tool writes a take (src/dispatch/write-take.ts).
  const id = 'tk_landed';
  const temp = path.join(takesDir(), `.${id}.json.tmp`);
  fs.writeFileSync(temp, JSON.stringify({ take_id: id, shot_id: 'sh010', parent_take_id: 'tk_0001', model: 'm', created_at: '2026-11-01T00:00:00Z', media: `media/${id}.png` }));
  fs.renameSync(temp, path.join(takesDir(), `${id}.json`));
  await waitFor(async () => ((await (await t.get(`/api/beats/b01/takes?projectId=${P}`)).text()).includes(id) ? true : undefined), 'the landed take');

  const after = await cacheStats();
  expect(after.projectReads, 'the project was not read whole').toBe(before.projectReads);
  expect(after.projectPatches).toBeGreaterThan(before.projectPatches);
  const read = after.filesRead - before.filesRead;
  expect(read).toBeGreaterThanOrEqual(1);
  expect(read).toBeLessThanOrEqual(2);
  await compareWithFullRead();
  // A shot edited in place: re-read alone too.
  const shot = path.join(store.dataDir, 'projects', P, 'shots', 'sh010.json');
  const doc = JSON.parse(fs.readFileSync(shot, 'utf8')) as Record<string, unknown>;
  fs.writeFileSync(shot, JSON.stringify({ ...doc, order: 999 }));
  await waitFor(async () => ((await (await t.get(`/api/beats/b01/lineage?projectId=${P}`)).text()).includes('"order":999') ? true : undefined), 'the edited shot');
  expect((await cacheStats()).projectReads).toBe(before.projectReads);
  await compareWithFullRead();
});

it('sees the take a generation job wrote without reading the project whole at its exit', async () => {
  await compareWithFullRead();
  const before = await cacheStats();
  const r = await t.post('/api/proposals/generate', { project: P, shotId: 'sh060' });
  expect(r.status).toBe(202);
  const { proposalId } = (await r.json()) as { proposalId: string };
  const { exit } = await waitForJobEvents(t.url, proposalId);
  expect(exit.summary).toBe('dispatch_cli exited rc=0');
  const takes = (await json(`/api/beats/b03/takes?projectId=${P}`)) as { shot_id: string; take_id: string }[];
  expect(takes.filter((k) => k.shot_id === 'sh060').length).toBeGreaterThan(0);
  const after = await cacheStats();
  expect(after.projectReads, 'the project was not read whole').toBe(before.projectReads);
  expect(after.filesRead - before.filesRead).toBeLessThanOrEqual(2);
  await compareWithFullRead();
});
