/**
 * Clicks through the real server (spec: partial-shape table, Clicks; api-decisions.md,
 * "Service routes with partial shape"): append, newest first, a persisted ring buffer per
 * project of a configured size.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventsAfter, mark, send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** Makes format-2 projects of these ids in the service's store (clicks need a project). */
function makeProjects(s: TestService, ...ids: string[]): void {
  for (const id of ids) {
    fs.mkdirSync(path.join(s.dataDir, 'projects', id), { recursive: true });
    fs.writeFileSync(path.join(s.dataDir, 'projects', id, 'project.json'), JSON.stringify({ format: 2, id, title: id }));
  }
}

describe('POST /api/clicks and GET /api/clicks', () => {
  it('stores a click (201 with the stored record) and lists newest first; no event', async () => {
    t = await startTestService({ store: 'empty' });
    makeProjects(t, 'harbor-lights');
    const since = mark(t);

    const a = await send(t, 'POST', '/api/clicks', { projectId: 'harbor-lights', target: 'take-card', x: 10.5, y: 20, meta: { takeId: 'tk_0001' } });
    const b = await send(t, 'POST', '/api/clicks', { project_id: 'harbor-lights', target: 'play' });

    expect(a.status).toBe(201);
    expect(a.json).toEqual({
      id: expect.any(Number),
      projectId: 'harbor-lights',
      target: 'take-card',
      x: 10.5,
      y: 20,
      meta: { takeId: 'tk_0001' },
      clickedAt: expect.stringMatching(/Z$/),
    });
    expect(b.json).toMatchObject({ projectId: 'harbor-lights', target: 'play', x: null, y: null, meta: null });
    const list = await send(t, 'GET', '/api/clicks?projectId=harbor-lights');
    expect(list.json).toEqual([b.json, a.json]);
    expect((await send(t, 'GET', '/api/clicks?project_id=harbor-lights&limit=1')).json).toEqual([b.json]);
    expect(await eventsAfter(t, since)).toEqual([]);
  });

  it('keeps the newest CONSOLE_CLICKS_PER_PROJECT clicks of each project (evicting the oldest in the database)', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_CLICKS_PER_PROJECT: '5' } });
    makeProjects(t, 'p1', 'p2');
    for (let i = 1; i <= 8; i++) await send(t, 'POST', '/api/clicks', { projectId: 'p1', target: `t${i}` });
    for (let i = 1; i <= 3; i++) await send(t, 'POST', '/api/clicks', { projectId: 'p2', target: `u${i}` });

    const p1 = (await send(t, 'GET', '/api/clicks?projectId=p1&limit=100')).json as { target: string }[];
    expect(p1.map((c) => c.target)).toEqual(['t8', 't7', 't6', 't5', 't4']);
    const p2 = (await send(t, 'GET', '/api/clicks?projectId=p2')).json as { target: string }[];
    expect(p2.map((c) => c.target)).toEqual(['u3', 'u2', 'u1']);
    expect(t.service.db!.prepare(`select count(*) as n from clicks where project_id = 'p1'`).get()).toEqual({ n: 5 });
    const all = (await send(t, 'GET', '/api/clicks')).json as { target: string }[];
    expect(all.map((c) => c.target)).toEqual(['u3', 'u2', 'u1', 't8', 't7', 't6', 't5', 't4']);
  });

  it('keeps the bound under concurrent appends', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_CLICKS_PER_PROJECT: '10' } });
    makeProjects(t, 'p1');
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(t!, 'POST', '/api/clicks', { projectId: 'p1', target: `t${i}` })));
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const newest = answers
      .map((a) => a.json.id as number)
      .sort((x, y) => y - x)
      .slice(0, 10);
    const kept = ((await send(t, 'GET', '/api/clicks?projectId=p1&limit=100')).json as { id: number }[]).map((c) => c.id);
    expect(kept).toEqual(newest);
  });

  it('answers 422 with loc/msg/type for a bad body and 400 for a malformed projectId query', async () => {
    t = await startTestService({ store: 'empty' });
    const r = await send(t, 'POST', '/api/clicks', { x: 'left', meta: 3 });
    expect(r.status).toBe(422);
    expect((r.json.detail as Issue[]).map((i) => [i.loc.join('.'), i.type]).sort()).toEqual([
      ['body.meta', 'record_type'],
      ['body.projectId', 'missing'],
      ['body.target', 'missing'],
      ['body.x', 'number_type'],
    ]);
    expect((await send(t, 'GET', '/api/clicks?projectId=a%2F..')).status).toBe(400);
    expect((await send(t, 'GET', '/api/clicks?limit=0')).status).toBe(422);
    expect((await send(t, 'GET', '/api/clicks')).json).toEqual([]);
  });
});

describe('clicks of projects that are not in the store', () => {
  it('answers 404 for a projectId that names no project, stores nothing; any project the store has is accepted', async () => {
    t = await startTestService(); // the sample store: harbor-lights, night-market, old-pilot (legacy)
    const projects = path.join(t.dataDir, 'projects');
    // Not projects: a folder without project.json or project.yaml, a file, a dot-folder, nothing at all.
    fs.mkdirSync(path.join(projects, 'just-a-folder', 'shots'), { recursive: true });
    fs.writeFileSync(path.join(projects, 'a-file'), '{}');
    fs.mkdirSync(path.join(projects, '.staging'));
    fs.writeFileSync(path.join(projects, '.staging', 'project.json'), JSON.stringify({ format: 2, id: '.staging', title: 'x' }));
    // Projects, whatever their state: format 2, legacy (project.yaml; format 1 project.json),
    // missing a canonical field (422 on its routes), created after start-up.
    fs.mkdirSync(path.join(projects, 'older'));
    fs.writeFileSync(path.join(projects, 'older', 'project.json'), JSON.stringify({ format: 1, id: 'older', title: 'Older' }));
    fs.mkdirSync(path.join(projects, 'untitled'));
    fs.writeFileSync(path.join(projects, 'untitled', 'project.json'), JSON.stringify({ format: 2, id: 'untitled' }));
    makeProjects(t, 'made-later');

    for (const id of ['nobody', 'just-a-folder', 'a-file', 'Harbor-Lights', 'harbor-lights.', 'harbor-lights-2']) {
      for (const key of ['projectId', 'project_id']) {
        const r = await send(t, 'POST', '/api/clicks', { [key]: id, target: 'play' });
        expect([id, key, r.status, r.json]).toEqual([id, key, 404, { detail: `unknown project ${id}`, code: 'project_not_found' }]);
      }
    }
    // A malformed id is a validation failure, as before (the body schema's id pattern).
    for (const id of ['.staging', '../harbor-lights', 'a/b', '']) {
      expect((await send(t, 'POST', '/api/clicks', { projectId: id, target: 'play' })).status, id).toBe(422);
    }
    for (const id of ['harbor-lights', 'night-market', 'old-pilot', 'older', 'untitled', 'made-later']) {
      const r = await send(t, 'POST', '/api/clicks', { projectId: id, target: 'play' });
      expect([id, r.status]).toEqual([id, 201]);
    }
    const stored = (await send(t, 'GET', '/api/clicks?limit=100')).json as { projectId: string }[];
    expect(stored.map((c) => c.projectId).sort()).toEqual(['harbor-lights', 'made-later', 'night-market', 'old-pilot', 'older', 'untitled']);
    expect(t.service.db!.prepare('select count(*) as n from clicks').get()).toEqual({ n: 6 });

    // A project removed from the store: its clicks are refused from then on, and still listed.
    fs.rmSync(path.join(projects, 'made-later'), { recursive: true });
    const gone = await send(t, 'POST', '/api/clicks', { projectId: 'made-later', target: 'play' });
    expect(gone.status).toBe(404);
    expect(((await send(t, 'GET', '/api/clicks?projectId=made-later')).json as unknown[]).length).toBe(1);
    // GET lists what is stored: nothing for an id that never had a project.
    expect((await send(t, 'GET', '/api/clicks?projectId=nobody')).json).toEqual([]);
  });
});

describe('CONSOLE_CLICKS_MAX_TOTAL', () => {
  it('keeps the newest clicks of all projects together, oldest dropped first, in the insert’s transaction; reported under limits', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_CLICKS_PER_PROJECT: '4', CONSOLE_CLICKS_MAX_TOTAL: '10' } });
    const ids = ['p1', 'p2', 'p3', 'p4', 'p5'];
    makeProjects(t, ...ids);
    expect((await send(t, 'GET', '/api/system-status')).json.limits).toMatchObject({ CONSOLE_CLICKS_PER_PROJECT: 4, CONSOLE_CLICKS_MAX_TOTAL: 10 });
    const count = () => (t!.service.db!.prepare('select count(*) as n from clicks').get() as { n: number }).n;
    const sent: { projectId: string; target: string }[] = [];
    // Round robin over 5 projects (each under its ring of 4 until the end), then one project alone.
    for (let i = 0; i < 15; i++) sent.push({ projectId: ids[i % 5] as string, target: `r${i}` });
    for (let i = 0; i < 6; i++) sent.push({ projectId: 'p1', target: `p1-${i}` });
    let most = 0;
    for (const c of sent) {
      expect((await send(t, 'POST', '/api/clicks', c)).status).toBe(201);
      most = Math.max(most, count());
    }
    expect(most).toBe(10);
    // What a bound of 10 in all and 4 per project keeps: p1's newest 4, and the newest 6
    // others of all, oldest dropped first.
    const kept = ((await send(t, 'GET', '/api/clicks?limit=100')).json as { target: string }[]).map((c) => c.target);
    expect(kept).toEqual(['p1-5', 'p1-4', 'p1-3', 'p1-2', 'r14', 'r13', 'r12', 'r11', 'r9', 'r8']);
    // Concurrent appends keep it too.
    const answers = await Promise.all(Array.from({ length: 40 }, (_, i) => send(t!, 'POST', '/api/clicks', { projectId: ids[i % 5], target: `c${i}` })));
    expect(answers.every((a) => a.status === 201)).toBe(true);
    expect(count()).toBe(10);
    const newest = answers
      .map((a) => a.json.id as number)
      .sort((x, y) => y - x)
      .slice(0, 10);
    expect(((await send(t, 'GET', '/api/clicks?limit=100')).json as { id: number }[]).map((c) => c.id)).toEqual(newest);
  });

  it('trims a table above a lowered bound at start-up, oldest first', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_CLICKS_MAX_TOTAL: '50' } });
    makeProjects(t, 'p1', 'p2');
    for (let i = 0; i < 30; i++) await send(t, 'POST', '/api/clicks', { projectId: i % 2 ? 'p1' : 'p2', target: `t${i}` });
    const tmp = t.tmp;
    await t.stop();
    t = await startTestService({ tmp, env: { CONSOLE_CLICKS_MAX_TOTAL: '7' } });
    const kept = ((await send(t, 'GET', '/api/clicks?limit=100')).json as { target: string }[]).map((c) => c.target);
    expect(kept).toEqual(['t29', 't28', 't27', 't26', 't25', 't24', 't23']);
    expect((await send(t, 'POST', '/api/clicks', { projectId: 'p1', target: 't30' })).status).toBe(201);
    expect(((await send(t, 'GET', '/api/clicks?limit=100')).json as { target: string }[]).map((c) => c.target)).toEqual(['t30', 't29', 't28', 't27', 't26', 't25', 't24']);
  });

  it('does not make an append slower at the default bound of 1,000,000 (figures printed)', async () => {
    const N = 5_000;
    const CAP = 1_000_000;
    // A state database already holding a full table: built by a first start, filled directly.
    t = await startTestService({ store: 'empty' });
    makeProjects(t, 'p1', 'p2', 'p3', 'p4');
    const tmp = t.tmp;
    const dbFile = t.config.stateDbPath;
    const appendMany = async (s: TestService, label: string, projects: [string, string]): Promise<number> => {
      const t0 = performance.now();
      for (let i = 0; i < N; i++) {
        const r = await fetch(`${s.url}/api/clicks`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ projectId: projects[i % 2], target: `${label}-${i}` }),
        });
        if (r.status !== 201) throw new Error(`append ${i}: ${r.status} ${await r.text()}`);
        await r.arrayBuffer();
      }
      return performance.now() - t0;
    };
    const emptyMs = await appendMany(t, 'empty', ['p1', 'p2']);
    const kept = (t.service.db!.prepare('select count(*) as n from clicks').get() as { n: number }).n;
    await t.stop();
    const { default: Database } = await import('../../src/state/sqlite/binding.js');
    const db = new Database(dbFile);
    // Spread over 2,000 projects of 500 each, the newest rows last.
    db.exec(`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${CAP})
             INSERT INTO clicks (project_id, target, x, y, meta, clicked_at)
             SELECT 'filler-' || (i % 2000), 'f' || i, NULL, NULL, NULL, '2026-01-01T00:00:00.000Z' FROM n`);
    const before = (db.prepare('select count(*) as n from clicks').get() as { n: number }).n;
    db.close();
    const s0 = performance.now();
    t = await startTestService({ tmp });
    const startMs = performance.now() - s0;
    // The same appends (two projects starting empty) as on the empty table.
    const fullMs = await appendMany(t, 'full', ['p3', 'p4']);
    const count = (t.service.db!.prepare('select count(*) as n from clicks').get() as { n: number }).n;
    const oldest = t.service.db!.prepare('select target from clicks order by id limit 1').get() as { target: string };
    console.log(
      `clicks: ${N} appends over HTTP, one at a time: ${emptyMs.toFixed(0)} ms on an empty table (${((N / emptyMs) * 1000).toFixed(0)}/s), ` +
        `${fullMs.toFixed(0)} ms on a table of ${before} rows with CONSOLE_CLICKS_MAX_TOTAL=${CAP} (${((N / fullMs) * 1000).toFixed(0)}/s); ` +
        `start-up on the full table (one count) ${startMs.toFixed(0)} ms; rows after: ${count}`,
    );
    expect(kept).toBe(2 * 1000); // each project's ring (CONSOLE_CLICKS_PER_PROJECT, default 1000)
    expect(before).toBe(CAP + kept);
    expect(count).toBe(CAP);
    // The oldest went first: the start-up dropped the first run's clicks (the oldest ids), and
    // the appends, until p3 and p4 filled their rings, the oldest fillers.
    expect(oldest.target).toBe(`f${kept + 1}`);
    // A ceiling, not a timing: a scan of the whole table per append (a count(*), an OFFSET walk
    // to the millionth row) would take minutes for these 5,000 appends.
    expect(fullMs).toBeLessThan(Math.max(30_000, emptyMs * 5));
  });
});
