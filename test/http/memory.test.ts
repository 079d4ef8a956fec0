/**
 * Memory toggles through the real server (spec: the memory-toggle row of the Events table;
 * api-decisions.md, "Mutations and lifecycle routes"): `GET /api/memory` shows the last toggle.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { eventsAfter, mark, send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function enabled(svc: TestService): Promise<Record<string, boolean>> {
  const r = await send(svc, 'GET', '/api/memory');
  expect(r.status).toBe(200);
  return Object.fromEntries((r.json as { id: string; enabled: boolean }[]).map((e) => [e.id, e.enabled]));
}

describe('POST /api/memory/{entry_id}/toggle', () => {
  it('disables and enables an entry: info events in engine/memory, and GET /api/memory follows', async () => {
    t = await startTestService();
    expect(await enabled(t)).toEqual({ 'handheld-only': false, 'mara-wardrobe': true, 'style-palette': true });
    const since = mark(t);

    const off = await send(t, 'POST', '/api/memory/style-palette/toggle', { on: false });
    expect(off.status).toBe(200);
    expect(off.json).toEqual({ ok: true, entryId: 'style-palette', on: false });
    expect(await enabled(t)).toEqual({ 'handheld-only': false, 'mara-wardrobe': true, 'style-palette': false });

    const on = await send(t, 'POST', '/api/memory/handheld-only/toggle', { on: true, extra: { by: 'ana', entry_id: 'forged' } });
    expect(on.json).toEqual({ ok: true, entryId: 'handheld-only', on: true });
    expect(await enabled(t)).toEqual({ 'handheld-only': true, 'mara-wardrobe': true, 'style-palette': false });

    const events = await eventsAfter(t, since);
    expect(events.map((e) => [e.severity, e.scope, e.summary, e.detail])).toEqual([
      ['info', 'engine/memory', 'Memory entry disabled: style-palette', null],
      ['info', 'engine/memory', 'Memory entry enabled: handheld-only', null],
    ]);
    expect(events.map((e) => e.payload)).toEqual([
      { entry_id: 'style-palette', on: false },
      { entry_id: 'handheld-only', on: true, by: 'ana' },
    ]);
  });

  it('takes the caller’s scope', async () => {
    t = await startTestService();
    const since = mark(t);
    await send(t, 'POST', '/api/memory/mara-wardrobe/toggle', { on: false, scope: 'chat/memory' });
    expect((await eventsAfter(t, since))[0]).toMatchObject({ scope: 'chat/memory', summary: 'Memory entry disabled: mara-wardrobe' });
  });

  it('answers 404 for an entry without a file, 400 for a malformed id, 422 for a bad body; nothing recorded', async () => {
    t = await startTestService();
    const since = mark(t);
    const unknown = await send(t, 'POST', '/api/memory/no-such-entry/toggle', { on: false });
    expect(unknown.status).toBe(404);
    expect(unknown.json).toEqual({ detail: 'unknown memory entry no-such-entry', code: 'memory_entry_not_found' });
    const bad = await send(t, 'POST', '/api/memory/a..b/toggle', { on: false });
    expect(bad.status).toBe(400);
    expect(bad.json.detail).toMatch(/^invalid entry_id/);
    const body = await send(t, 'POST', '/api/memory/style-palette/toggle', { on: 'no' });
    expect(body.status).toBe(422);
    expect(body.json.detail as Issue[]).toEqual([{ loc: ['body', 'on'], msg: 'Input should be a valid boolean', type: 'boolean_type' }]);
    expect(await eventsAfter(t, since)).toEqual([]);
    expect(t.service.db!.prepare('select count(*) as n from memory_toggle_log').get()).toEqual({ n: 0 });
  });
});
