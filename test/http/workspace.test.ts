/**
 * Workspace state through the real server (spec: partial-shape table, Workspace state;
 * api-decisions.md, "Service routes with partial shape"): an opaque blob with a revision,
 * 409 on a stale revision, and corrupt-blob reports kept for inspection (size-bounded).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const put = (svc: TestService, wid: string, body: unknown) => send(svc, 'PUT', `/api/workspace-state/${wid}`, body);

describe('GET and PUT /api/workspace-state/{wid}', () => {
  it('404 before the first write; PUT with revision 0 creates revision 1; each PUT with the current revision adds one', async () => {
    t = await startTestService({ store: 'empty' });
    const none = await send(t, 'GET', '/api/workspace-state/main');
    expect(none.status).toBe(404);
    expect(none.json).toEqual({ detail: 'no workspace state main', code: 'workspace_not_found' });

    const blob = { panels: [{ id: 'takes', width: 320 }], snake_case_member: true, n: null };
    const first = await put(t, 'main', { revision: 0, state: blob });
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ wid: 'main', revision: 1, state: blob, updatedAt: expect.stringMatching(/Z$/) });
    expect((await send(t, 'GET', '/api/workspace-state/main')).json).toEqual(first.json);

    const second = await put(t, 'main', { revision: 1, state: 'any JSON value' });
    expect(second.json).toMatchObject({ revision: 2, state: 'any JSON value' });
    const third = await put(t, 'main', { revision: 2, state: null });
    expect(third.json).toMatchObject({ revision: 3, state: null });
    expect((await send(t, 'GET', '/api/workspace-state/main')).json).toMatchObject({ revision: 3, state: null });
  });

  it('a stale revision is a 409 carrying the current revision, and nothing is written', async () => {
    t = await startTestService({ store: 'empty' });
    await put(t, 'w1', { revision: 0, state: { a: 1 } });
    await put(t, 'w1', { revision: 1, state: { a: 2 } });

    for (const revision of [0, 1, 3]) {
      const r = await put(t, 'w1', { revision, state: { a: 'lost' } });
      expect(r.status).toBe(409);
      expect(r.json).toEqual({ detail: `stale revision ${revision} for workspace w1: the current revision is 2`, code: 'stale_revision', revision: 2 });
    }
    expect((await send(t, 'GET', '/api/workspace-state/w1')).json).toMatchObject({ revision: 2, state: { a: 2 } });
  });

  it('of concurrent writers with the same revision, exactly one wins', async () => {
    t = await startTestService({ store: 'empty' });
    await put(t, 'w1', { revision: 0, state: 0 });
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => put(t!, 'w1', { revision: 1, state: i })));
    expect(answers.filter((a) => a.status === 200)).toHaveLength(1);
    expect(answers.filter((a) => a.status === 409)).toHaveLength(19);
    const winner = answers.find((a) => a.status === 200)!.json;
    expect((await send(t, 'GET', '/api/workspace-state/w1')).json).toEqual(winner);
  });

  it('answers 400 for a malformed wid and 422 for a bad body', async () => {
    t = await startTestService({ store: 'empty' });
    expect((await send(t, 'GET', '/api/workspace-state/bad%20wid')).status).toBe(400);
    expect((await put(t, '.hidden', { revision: 0, state: 1 })).status).toBe(400);
    const missing = await put(t, 'w1', { revision: -1 });
    expect(missing.status).toBe(422);
    expect((missing.json.detail as Issue[]).map((i) => [i.loc.join('.'), i.type]).sort()).toEqual([
      ['body.revision', 'greater_than_equal'],
      ['body.state', 'missing'],
    ]);
    expect((await put(t, 'w1', { revision: 1.5, state: 1 })).status).toBe(422);
    expect((await send(t, 'GET', '/api/workspace-state/w1')).status).toBe(404);
  });
});

describe('POST /api/workspace-state/{wid}/report', () => {
  it('stores the corrupt blob for inspection (202) without touching the state', async () => {
    t = await startTestService({ store: 'empty' });
    await put(t, 'main', { revision: 0, state: { ok: true } });

    const r = await send(t, 'POST', '/api/workspace-state/main/report', { blob: '{"panels": [', reason: 'JSON.parse failed' });

    expect(r.status).toBe(202);
    expect(r.json).toEqual({ ok: true, wid: 'main', reportId: expect.any(Number), bytes: Buffer.byteLength(JSON.stringify('{"panels": [')) });
    const r2 = await send(t, 'POST', '/api/workspace-state/main/report', { blob: { panels: 'not an array', snake_case: 1 } });
    const reports = await send(t, 'GET', '/api/workspace-state/main/reports');
    expect(reports.json).toEqual([
      { id: r2.json.reportId, wid: 'main', reason: null, blob: { panels: 'not an array', snake_case: 1 }, bytes: r2.json.bytes, receivedAt: expect.any(String) },
      { id: r.json.reportId, wid: 'main', reason: 'JSON.parse failed', blob: '{"panels": [', bytes: r.json.bytes, receivedAt: expect.any(String) },
    ]);
    expect((await send(t, 'GET', '/api/workspace-state/main')).json).toMatchObject({ revision: 1, state: { ok: true } });
    // A workspace never written may be reported too.
    expect((await send(t, 'POST', '/api/workspace-state/other/report', { blob: null })).status).toBe(202);
  });

  it('answers 413 past CONSOLE_WORKSPACE_REPORT_MAX_BYTES and stores nothing', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_WORKSPACE_REPORT_MAX_BYTES: '2048' } });
    const fits = 'x'.repeat(2046); // 2048 bytes as a JSON string
    expect((await send(t, 'POST', '/api/workspace-state/main/report', { blob: fits })).status).toBe(202);
    const r = await send(t, 'POST', '/api/workspace-state/main/report', { blob: `${fits}y` });
    expect(r.status).toBe(413);
    expect(r.json).toEqual({ detail: 'workspace report too large: 2049 bytes (limit 2048)', code: 'report_too_large' });
    expect((await send(t, 'GET', '/api/workspace-state/main/reports')).json).toHaveLength(1);
  });

  it('keeps the newest 20 reports per workspace', async () => {
    t = await startTestService({ store: 'empty' });
    for (let i = 0; i < 23; i++) await send(t, 'POST', '/api/workspace-state/main/report', { blob: i });
    const reports = (await send(t, 'GET', '/api/workspace-state/main/reports')).json as { blob: number }[];
    expect(reports.map((x) => x.blob)).toEqual(Array.from({ length: 20 }, (_, i) => 22 - i));
  });

  it('answers 422 without a blob and 400 for a malformed wid', async () => {
    t = await startTestService({ store: 'empty' });
    const r = await send(t, 'POST', '/api/workspace-state/main/report', { reason: 'x' });
    expect(r.json.detail).toEqual([{ loc: ['body', 'blob'], msg: 'Field required', type: 'missing' }]);
    expect((await send(t, 'POST', '/api/workspace-state/a..b/report', { blob: 1 })).status).toBe(400);
  });
});
