/**
 * Selection and recent items through the real server (api-decisions.md, "Service routes with
 * partial shape": Selection, Recent).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const putSel = (svc: TestService, projectId: string, body: unknown) => send(svc, 'PUT', `/api/selection?projectId=${projectId}`, body);

describe('GET and PUT /api/selection', () => {
  it('answers a null selection before the first PUT, then the stored one (snake_case members camelised, others kept)', async () => {
    t = await startTestService({ store: 'empty' });
    expect((await send(t, 'GET', '/api/selection?projectId=harbor-lights')).json).toEqual({ projectId: 'harbor-lights', selection: null, updatedAt: null });

    const r = await putSel(t, 'harbor-lights', { episode_id: '1', beatId: 'b01', takeId: null, zoom: 1.5, panel: { open: true } });

    expect(r.status).toBe(200);
    const selection = { episodeId: '1', beatId: 'b01', takeId: null, zoom: 1.5, panel: { open: true } };
    expect(r.json).toEqual({ projectId: 'harbor-lights', selection, updatedAt: expect.stringMatching(/Z$/) });
    expect((await send(t, 'GET', '/api/selection?project_id=harbor-lights')).json).toEqual(r.json);
    // Another project's selection is separate; a PUT replaces the whole selection.
    await putSel(t, 'night-market', { shotId: 'sh010' });
    await putSel(t, 'harbor-lights', { beatId: 'b02' });
    expect((await send(t, 'GET', '/api/selection?projectId=harbor-lights')).json.selection).toEqual({ beatId: 'b02' });
    expect((await send(t, 'GET', '/api/selection?projectId=night-market')).json.selection).toEqual({ shotId: 'sh010' });
  });

  it('answers 400 for a malformed projectId, 422 without one or with a malformed item id', async () => {
    t = await startTestService({ store: 'empty' });
    expect((await send(t, 'GET', '/api/selection?projectId=..')).status).toBe(400);
    const missing = await send(t, 'GET', '/api/selection');
    expect(missing.json.detail).toEqual([{ loc: ['query', 'projectId'], msg: 'Field required', type: 'missing' }]);
    const bad = await putSel(t, 'p1', { takeId: '../x' });
    expect(bad.status).toBe(422);
    expect((bad.json.detail as Issue[])[0]!.loc).toEqual(['body', 'takeId']);
    expect((await putSel(t, 'p1', [1, 2])).status).toBe(422);
  });
});

describe('GET /api/recent', () => {
  it('lists the projects and most specific items whose selection was stored, newest first; reopening moves to the front', async () => {
    t = await startTestService({ store: 'empty' });
    expect((await send(t, 'GET', '/api/recent')).json).toEqual({ projects: [], items: [] });

    await putSel(t, 'harbor-lights', { episodeId: '1', beatId: 'b01', takeId: 'tk_0002' });
    await putSel(t, 'night-market', { beatId: 'b01' });
    await putSel(t, 'harbor-lights', { episodeId: '2' });
    await putSel(t, 'empty-one', { zoom: 2 });

    const r = (await send(t, 'GET', '/api/recent')).json as {
      projects: { projectId: string; openedAt: string }[];
      items: { projectId: string; kind: string; id: string; openedAt: string }[];
    };
    expect(r.projects.map((p) => p.projectId)).toEqual(['empty-one', 'harbor-lights', 'night-market']);
    expect(r.items.map((i) => [i.projectId, i.kind, i.id])).toEqual([
      ['harbor-lights', 'episode', '2'],
      ['night-market', 'beat', 'b01'],
      ['harbor-lights', 'take', 'tk_0002'],
    ]);
    expect(r.projects[0]!.openedAt).toMatch(/Z$/);
    const limited = (await send(t, 'GET', '/api/recent?limit=1')).json;
    expect(limited.projects).toHaveLength(1);
    expect(limited.items).toHaveLength(1);
    expect((await send(t, 'GET', '/api/recent?limit=0')).status).toBe(422);
  });

  it('keeps the newest 50 projects', async () => {
    t = await startTestService({ store: 'empty' });
    for (let i = 0; i < 53; i++) await putSel(t, `p${i}`, {});
    const r = (await send(t, 'GET', '/api/recent?limit=200')).json as { projects: { projectId: string }[] };
    expect(r.projects).toHaveLength(50);
    expect(r.projects[0]!.projectId).toBe('p52');
    expect(r.projects[49]!.projectId).toBe('p3');
  });
});
