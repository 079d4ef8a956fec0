/**
 * Take actions through the real server (spec: "Take actions", the take-action row of the
 * Events table and rule 5; api-decisions.md, "Mutations and lifecycle routes": the recorded
 * state shows in the takes and lineage routes, primary unique per shot).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventsAfter, fallbackCounts, mark, send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(): Promise<TestService> {
  t = await startTestService();
  return t;
}

const act = (svc: TestService, takeId: string, body: Record<string, unknown>) => send(svc, 'POST', `/api/takes/${takeId}/action`, { projectId: P, ...body });

/** take_id → [primary, circled, rejected] from the takes route of beat b01 (shots sh010, sh020). */
async function states(svc: TestService, beat = 'b01'): Promise<Record<string, [boolean, boolean, boolean]>> {
  const r = await send(svc, 'GET', `/api/beats/${beat}/takes?projectId=${P}`);
  expect(r.status).toBe(200);
  return Object.fromEntries((r.json as { take_id: string; primary: boolean; circled: boolean; rejected: boolean }[]).map((x) => [x.take_id, [x.primary, x.circled, x.rejected]]));
}

describe('POST /api/takes/{take_id}/action: events', () => {
  it.each([
    ['marked_primary', 'success', 'Take marked primary: tk_0002'],
    ['circled_toggled', 'info', 'Take circled toggled: tk_0002'],
    ['rejected', 'info', 'Take rejected: tk_0002'],
    ['sent_to_edit', 'info', 'Take sent to edit: tk_0002'],
  ] as const)('%s: one %s event %j in scope engine, payload take_id, action and extras', async (action, severity, summary) => {
    const svc = await start();
    const since = mark(svc);

    const r = await act(svc, 'tk_0002', { action, extra: { by: 'ana', take_id: 'forged' } });

    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ ok: true, takeId: 'tk_0002', action, severity, onDisk: true });
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ severity, scope: 'engine', summary, detail: null });
    expect(events[0]!.payload).toEqual({ take_id: 'tk_0002', action, by: 'ana' });
  });

  it('lets the caller set the severity and the scope', async () => {
    const svc = await start();
    const since = mark(svc);
    const r = await act(svc, 'tk_0005', { action: 'marked_primary', severity: 'warning', scope: 'chat/takes' });
    expect(r.json.severity).toBe('warning');
    expect((await eventsAfter(svc, since))[0]).toMatchObject({ severity: 'warning', scope: 'chat/takes', summary: 'Take marked primary: tk_0005' });
    // The override changes only the event: the take is primary.
    expect((await states(svc)).tk_0005).toEqual([true, false, false]);
  });

  it('a take not on disk: take_id_not_on_disk counted, a single fallback event (also over a caller severity), 200, state unchanged', async () => {
    const svc = await start();
    const since = mark(svc);

    const r = await act(svc, 'tk_9999', { action: 'marked_primary', severity: 'success' });

    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      ok: true,
      takeId: 'tk_9999',
      action: 'marked_primary',
      severity: 'fallback',
      onDisk: false,
      state: { primary: false, circled: false, rejected: false },
      eventId: expect.stringMatching(/^\d+$/),
    });
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ severity: 'fallback', scope: 'engine', summary: 'Take marked primary: tk_9999', payload: { take_id: 'tk_9999', action: 'marked_primary' } });
    expect(await fallbackCounts(svc)).toEqual({ proposal_id_not_pending: 0, take_id_not_on_disk: 1 });
    // A take of another project is not on disk in this one either.
    await send(svc, 'POST', '/api/takes/tk_0001/action', { projectId: 'night-market-x', action: 'rejected' });
    expect((await fallbackCounts(svc)).take_id_not_on_disk).toBe(2);
    const logged = svc.service.db!.prepare('select take_id, on_disk, severity from take_actions order by id').all();
    expect(logged).toEqual([
      { take_id: 'tk_9999', on_disk: 0, severity: 'fallback' },
      { take_id: 'tk_0001', on_disk: 0, severity: 'fallback' },
    ]);
  });
});

describe('take states in the takes and lineage routes', () => {
  it('marked_primary makes the take its shot’s only primary; other shots keep theirs', async () => {
    const svc = await start();
    await act(svc, 'tk_0005', { action: 'marked_primary' }); // sh020
    await act(svc, 'tk_0002', { action: 'marked_primary' }); // sh010
    expect(await states(svc)).toMatchObject({ tk_0002: [true, false, false], tk_0005: [true, false, false], tk_0001: [false, false, false] });

    const r = await act(svc, 'tk_0004', { action: 'marked_primary' }); // sh010 again

    expect(r.json.state).toEqual({ primary: true, circled: false, rejected: false });
    const s = await states(svc);
    expect(s).toEqual({
      tk_0001: [false, false, false],
      tk_0002: [false, false, false],
      tk_0003: [false, false, false],
      tk_0004: [true, false, false],
      tk_0005: [true, false, false],
    });
    const primaries = svc.service.db!.prepare('select take_id from take_states where is_primary = 1 order by take_id').all();
    expect(primaries).toEqual([{ take_id: 'tk_0004' }, { take_id: 'tk_0005' }]);
  });

  it('circled_toggled flips circled, rejected sets rejected, other actions change nothing; lineage shows it', async () => {
    const svc = await start();
    await act(svc, 'tk_0003', { action: 'circled_toggled' });
    await act(svc, 'tk_0001', { action: 'circled_toggled' });
    await act(svc, 'tk_0001', { action: 'circled_toggled' });
    await act(svc, 'tk_0003', { action: 'rejected' });
    await act(svc, 'tk_0003', { action: 'rejected' });
    const other = await act(svc, 'tk_0003', { action: 'sent_to_edit' });
    expect(other.json.state).toEqual({ primary: false, circled: true, rejected: true });

    expect((await states(svc)).tk_0003).toEqual([false, true, true]);
    expect((await states(svc)).tk_0001).toEqual([false, false, false]);
    const lineage = await send(svc, 'GET', `/api/beats/b01/lineage?projectId=${P}&takeId=tk_0003`);
    expect(lineage.status).toBe(200);
    const node = (lineage.json.nodes as { key: string; circled?: boolean; rejected?: boolean; primary?: boolean }[]).find((n) => n.key === 'take:tk_0003');
    expect(node).toMatchObject({ primary: false, circled: true, rejected: true });
  });

  it('a cached takes answer goes stale on each action (ETag changes)', async () => {
    const svc = await start();
    const first = await fetch(`${svc.url}/api/beats/b04/takes?projectId=${P}`);
    const etag = first.headers.get('etag')!;
    await first.arrayBuffer();
    await act(svc, 'tk_0007', { action: 'circled_toggled' });
    const second = await fetch(`${svc.url}/api/beats/b04/takes?projectId=${P}`, { headers: { 'if-none-match': etag } });
    expect(second.status).toBe(200);
    expect(((await second.json()) as { take_id: string; circled: boolean }[]).find((x) => x.take_id === 'tk_0007')!.circled).toBe(true);
  });

  it('marked_primary on a take file without shot_id is a 422 MissingCanonicalField and records nothing', async () => {
    const svc = await start();
    fs.writeFileSync(path.join(svc.dataDir, 'projects', P, 'takes', 'tk_0100.json'), JSON.stringify({ take_id: 'tk_0100' }));
    const since = mark(svc);
    const r = await act(svc, 'tk_0100', { action: 'marked_primary' });
    expect(r.status).toBe(422);
    expect(r.json.detail).toMatchObject({ error: 'missing_canonical_field', field: 'shot_id', project_id: P });
    expect(await eventsAfter(svc, since)).toEqual([]);
  });
});

describe('POST /api/takes/{take_id}/action: validation', () => {
  it('accepts project_id (snake_case)', async () => {
    const svc = await start();
    const r = await send(svc, 'POST', '/api/takes/tk_0001/action', { project_id: P, action: 'rejected' });
    expect(r.status).toBe(200);
    expect(r.json.onDisk).toBe(true);
  });

  it('answers 400 for a malformed take id and 422 with loc/msg/type for a bad body', async () => {
    const svc = await start();
    const since = mark(svc);
    const bad = await send(svc, 'POST', '/api/takes/..%2Fx/action', { projectId: P, action: 'rejected' });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/^invalid take_id/);
    const r = await send(svc, 'POST', '/api/takes/tk_0001/action', { action: 'two words', severity: 'loud', projectId: '../x' });
    expect(r.status).toBe(422);
    expect([...new Set((r.json.detail as Issue[]).map((i) => i.loc.join('.')))].sort()).toEqual(['body.action', 'body.projectId', 'body.severity']);
    const missing = await send(svc, 'POST', '/api/takes/tk_0001/action', { action: 'rejected' });
    expect(missing.json.detail).toEqual([{ loc: ['body', 'projectId'], msg: 'Field required', type: 'missing' }]);
    expect(await eventsAfter(svc, since)).toEqual([]);
  });
});
