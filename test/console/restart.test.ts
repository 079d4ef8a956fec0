/**
 * A restart on the same state directory keeps the console's recorded state: every decision (fallback ones included), proposal status, take state,
 * memory toggle, click, workspace blob and report, selection, recent item, fallback count and
 * their events. The first service is stopped, a second one starts on the same temp root.
 */
import { afterEach, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
import { allEvents } from '../helpers/events.js';
import { createProposal, send } from './helpers.js';

const P = 'harbor-lights';
const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
});

/** Everything the console recorded, as the API answers it. */
async function snapshot(t: TestService, ids: string[]) {
  const get = async (path: string) => {
    const r = await send(t, 'GET', path);
    expect(r.status, path).toBe(200);
    return r.json;
  };
  return {
    proposals: await get('/api/proposals'),
    decisions: await Promise.all(ids.map((id) => get(`/api/proposals/${id}/decisions`))),
    takes: await get(`/api/beats/b01/takes?projectId=${P}`),
    lineage: await get(`/api/beats/b04/lineage?projectId=${P}`),
    memory: await get('/api/memory'),
    clicks: await get('/api/clicks?limit=1000'),
    workspace: await get('/api/workspace-state/main'),
    reports: await get('/api/workspace-state/main/reports'),
    selection: await get(`/api/selection?projectId=${P}`),
    recent: await get('/api/recent'),
    fallbacks: (await get('/api/system-status')).fallbacks,
    events: (await allEvents(t.url)).filter((e) => e.scope !== 'engine/projects'),
  };
}

it('keeps every decision, take state, toggle, click, workspace blob, selection and fallback count across a restart', async () => {
  const first = await startTestService({ env: { CONSOLE_CLICKS_PER_PROJECT: '3' } });
  services.push(first);
  const a = await createProposal(first, { title: 'a', kind: 'ReshootProposal' });
  const b = await createProposal(first, { title: 'b' });
  await send(first, 'POST', `/api/proposals/${a}/approve`, { extra: { by: 'ana' } });
  await send(first, 'POST', `/api/proposals/${a}/decision`, { decision: 'rejected' }); // fallback
  await send(first, 'POST', `/api/proposals/${b}/defer`);
  await send(first, 'POST', '/api/proposals/prop_ffffffffffff/decision', { decision: 'approved' }); // unknown: fallback
  await send(first, 'POST', '/api/takes/tk_0002/action', { projectId: P, action: 'marked_primary' });
  await send(first, 'POST', '/api/takes/tk_0005/action', { projectId: P, action: 'circled_toggled' });
  await send(first, 'POST', '/api/takes/tk_0003/action', { projectId: P, action: 'rejected' });
  await send(first, 'POST', '/api/takes/tk_0007/action', { projectId: P, action: 'circled_toggled' });
  await send(first, 'POST', '/api/takes/tk_0404/action', { projectId: P, action: 'rejected' }); // not on disk
  await send(first, 'POST', '/api/memory/style-palette/toggle', { on: false });
  await send(first, 'POST', '/api/memory/handheld-only/toggle', { on: true });
  for (let i = 0; i < 5; i++) await send(first, 'POST', '/api/clicks', { projectId: P, target: `t${i}`, x: i });
  await send(first, 'PUT', '/api/workspace-state/main', { revision: 0, state: { v: 1 } });
  await send(first, 'PUT', '/api/workspace-state/main', { revision: 1, state: { v: 2, panels: ['takes'] } });
  await send(first, 'POST', '/api/workspace-state/main/report', { blob: '{"v":', reason: 'truncated' });
  await send(first, 'PUT', `/api/selection?projectId=${P}`, { beatId: 'b01', takeId: 'tk_0002' });
  const ids = [a, b, 'prop_ffffffffffff'];
  const before = await snapshot(first, ids);
  // The snapshot is not vacuous.
  expect(before.decisions.map((d: unknown[]) => d.length)).toEqual([2, 1, 1]);
  expect(before.fallbacks).toEqual({ proposal_id_not_pending: 2, take_id_not_on_disk: 1 });
  expect(before.clicks.map((c: { target: string }) => c.target)).toEqual(['t4', 't3', 't2']);
  expect(before.takes.find((x: { take_id: string }) => x.take_id === 'tk_0002').primary).toBe(true);

  await first.stop();
  const second = await startTestService({ tmp: first.tmp, env: { CONSOLE_CLICKS_PER_PROJECT: '3' } });
  services.push(second);

  expect(await snapshot(second, ids)).toEqual(before);

  // The recorded state keeps working from where it was: the decided id is still not pending,
  // the kept primary is cleared by a new one, the ring buffer keeps its bound.
  await send(second, 'POST', `/api/proposals/${b}/approve`);
  expect((await send(second, 'GET', '/api/system-status')).json.fallbacks.proposal_id_not_pending).toBe(3);
  await send(second, 'POST', '/api/takes/tk_0001/action', { projectId: P, action: 'marked_primary' });
  const takes = (await send(second, 'GET', `/api/beats/b01/takes?projectId=${P}`)).json as { take_id: string; primary: boolean }[];
  expect(takes.filter((x) => x.primary).map((x) => x.take_id)).toEqual(['tk_0001']);
  await send(second, 'POST', '/api/clicks', { projectId: P, target: 't5' });
  expect(((await send(second, 'GET', `/api/clicks?projectId=${P}`)).json as { target: string }[]).map((c) => c.target)).toEqual(['t5', 't4', 't3']);
  expect((await send(second, 'PUT', '/api/workspace-state/main', { revision: 1, state: {} })).status).toBe(409);
});
