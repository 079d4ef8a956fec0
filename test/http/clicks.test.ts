/**
 * Clicks through the real server (spec: partial-shape table, Clicks; api-decisions.md,
 * "Service routes with partial shape"): append, newest first, a persisted ring buffer per
 * project of a configured size.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventsAfter, mark, send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('POST /api/clicks and GET /api/clicks', () => {
  it('stores a click (201 with the stored record) and lists newest first; no event', async () => {
    t = await startTestService({ store: 'empty' });
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
    for (let i = 1; i <= 8; i++) await send(t, 'POST', '/api/clicks', { projectId: 'p1', target: `t${i}` });
    for (let i = 1; i <= 3; i++) await send(t, 'POST', '/api/clicks', { projectId: 'p2', target: `u${i}` });

    const p1 = (await send(t, 'GET', '/api/clicks?projectId=p1&limit=100')).json as { target: string }[];
    expect(p1.map((c) => c.target)).toEqual(['t8', 't7', 't6', 't5', 't4']);
    const p2 = (await send(t, 'GET', '/api/clicks?projectId=p2')).json as { target: string }[];
    expect(p2.map((c) => c.target)).toEqual(['u3', 'u2', 'u1']);
    expect(t.service.db.prepare(`select count(*) as n from clicks where project_id = 'p1'`).get()).toEqual({ n: 5 });
    const all = (await send(t, 'GET', '/api/clicks')).json as { target: string }[];
    expect(all.map((c) => c.target)).toEqual(['u3', 'u2', 'u1', 't8', 't7', 't6', 't5', 't4']);
  });

  it('keeps the bound under concurrent appends', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_CLICKS_PER_PROJECT: '10' } });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => send(t!, 'POST', '/api/clicks', { projectId: 'p1', target: `t${i}` })));
    expect(answers.every((a) => a.status === 201)).toBe(true);
    const newest = answers.map((a) => a.json.id as number).sort((x, y) => y - x).slice(0, 10);
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
