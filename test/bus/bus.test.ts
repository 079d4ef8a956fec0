/**
 * The event bus of the running service (src/bus/bus.ts, src/state/sqlite/event-log.ts): the shape
 * of what `publish` hands back, ids strictly increasing and never reused across restarts,
 * and the id reservation in `meta` that protects against reuse after a crash
 * (api-decisions.md, Events). Real server on port 0, real temp SQLite file.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { BusEvent, EventInput } from '../../src/bus/event.js';
import { allEvents } from '../helpers/events.js';
import { startTestService, type TestService, publishOn } from '../helpers/service.js';

const EVENT_KEYS = ['detail', 'id', 'payload', 'scope', 'severity', 'summary', 'ts'];
const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** Every service a test started; stopped (and its temp dir removed) after each test. */
let started: TestService[] = [];
let tmpRoots: string[] = [];
afterEach(async () => {
  for (const s of started) await s.stop();
  for (const root of tmpRoots) fs.rmSync(root, { recursive: true, force: true });
  started = [];
  tmpRoots = [];
});

async function start(tmp?: string, env: Record<string, string> = {}): Promise<TestService> {
  const t = await startTestService(tmp ? { tmp, env } : { store: 'empty', env });
  started.push(t);
  if (!tmpRoots.includes(t.tmp)) tmpRoots.push(t.tmp);
  return t;
}

function publishMany(t: TestService, n: number, make: (i: number) => Partial<EventInput> = () => ({})): BusEvent[] {
  return Array.from({ length: n }, (_, i) => publishOn(t, { severity: 'info', scope: 'test/bus', summary: `e${i}`, ...make(i) }));
}

const dbFile = (t: TestService) => path.join(t.stateDir, 'console-state.db');

/** Reads `meta.event_id_reserved` and the stored id range through a separate connection. */
function readIdState(file: string): { reserved: number; maxStored: number; count: number } {
  const db = new Database(file, { fileMustExist: true });
  try {
    const row = db.prepare(`SELECT value FROM meta WHERE key = 'event_id_reserved'`).get() as { value: string } | undefined;
    const { m, c } = db.prepare('SELECT max(id) AS m, count(*) AS c FROM events').get() as { m: number | null; c: number };
    return { reserved: row === undefined ? -1 : Number(row.value), maxStored: m ?? 0, count: c };
  } finally {
    db.close();
  }
}

const maxId = (evs: readonly { id: string }[]) => evs.reduce((m, e) => Math.max(m, Number(e.id)), -Infinity);

describe('bus: publish', () => {
  it('returns the stored event: decimal id, ISO-8601 UTC ms ts, the input, detail null and payload {} by default', async () => {
    const t = await start();
    const bare = publishOn(t, { severity: 'info', scope: 'test/bus', summary: 'bare' });
    const full = publishOn(t, {
      severity: 'fallback',
      scope: 'test/bus',
      summary: 'full',
      detail: 'why',
      payload: { k: 'v' },
    });
    for (const e of [bare, full]) {
      expect(Object.keys(e).sort()).toEqual(EVENT_KEYS);
      expect(e.id).toMatch(/^\d+$/);
      expect(e.ts).toMatch(TS);
    }
    expect(bare).toMatchObject({ severity: 'info', scope: 'test/bus', summary: 'bare', detail: null, payload: {} });
    expect(full).toMatchObject({ severity: 'fallback', scope: 'test/bus', summary: 'full', detail: 'why', payload: { k: 'v' } });
    // A detail given as null stays null; the stored copy is what publish returned.
    const explicitNull = publishOn(t, { severity: 'info', scope: 'test/bus', summary: 'n', detail: null });
    expect(explicitNull.detail).toBeNull();
    expect(await allEvents(t.url)).toEqual([bare, full, explicitNull]);
  });

  it('keeps ids strictly increasing within a burst and across flushes', async () => {
    const t = await start();
    const evs = publishMany(t, 300);
    await new Promise((r) => setImmediate(r));
    evs.push(...publishMany(t, 300));
    await new Promise((r) => setTimeout(r, 5));
    evs.push(...publishMany(t, 10));
    const nums = evs.map((e) => Number(e.id));
    for (let i = 1; i < nums.length; i++) expect(nums[i]).toBeGreaterThan(nums[i - 1] as number);
    expect((await allEvents(t.url)).map((e) => e.id)).toEqual(evs.map((e) => e.id));
  });
});

describe('bus: ids across restarts', () => {
  it('never reuses an id after a stop and a restart on the same state database', async () => {
    const first = await start();
    const before = publishMany(first, 25);
    const lastBefore = maxId(before);
    await first.stop();

    const second = await start(first.tmp);
    // The events of the first run are still there (sinceId works across restarts).
    expect((await allEvents(second.url)).map((e) => e.id)).toEqual(before.map((e) => e.id));
    const after = publishMany(second, 25);
    for (const e of after) expect(Number(e.id)).toBeGreaterThan(lastBefore);
    const stored = await allEvents(second.url);
    expect(stored.map((e) => e.id)).toEqual([...before, ...after].map((e) => e.id));
    expect(new Set(stored.map((e) => e.id)).size).toBe(stored.length);
    // A client that resumes from the last id of the first run gets exactly the new events.
    expect((await allEvents(second.url, '', String(lastBefore))).map((e) => e.id)).toEqual(after.map((e) => e.id));
  });

  it('keeps increasing over several restarts, including runs that publish nothing', async () => {
    let t = await start();
    const root = t.tmp;
    let high = maxId(publishMany(t, 3));
    for (const publishes of [0, 5, 0, 0, 2]) {
      await t.stop();
      t = await start(root);
      const evs = publishMany(t, publishes);
      for (const e of evs) expect(Number(e.id)).toBeGreaterThan(high);
      if (evs.length > 0) high = maxId(evs);
    }
    const probe = publishMany(t, 1)[0] as BusEvent;
    expect(Number(probe.id)).toBeGreaterThan(high);
  });

  it('leaves meta.event_id_reserved at or above every id handed out, once the service is stopped', async () => {
    const t = await start();
    const evs = publishMany(t, 40);
    await t.stop();
    const { reserved, maxStored, count } = readIdState(dbFile(t));
    expect(count).toBe(40);
    expect(maxStored).toBe(maxId(evs));
    expect(reserved).toBeGreaterThanOrEqual(maxId(evs));
  });

  it('reserves an id in the database before handing it out, across reservation blocks', async () => {
    // The reservation is what keeps a crash (SIGKILL before the next flush) from reusing ids
    // that a producer already saw: it must be on disk synchronously, before any flush.
    const t = await start();
    const file = dbFile(t);
    const one = publishMany(t, 1);
    expect(readIdState(file).reserved).toBeGreaterThanOrEqual(maxId(one));
    expect(readIdState(file).count).toBe(0); // not flushed yet: only the reservation is on disk

    // Cross at least one reservation block (10,000 ids in src/state/sqlite/event-log.ts), all in this tick.
    const many = publishMany(t, 12_000);
    expect(readIdState(file).reserved).toBeGreaterThanOrEqual(maxId(many));
    await new Promise((r) => setImmediate(r));
    await t.stop();
    const after = readIdState(file);
    expect(after.reserved).toBeGreaterThanOrEqual(after.maxStored);
    expect(after.maxStored).toBe(maxId(many));
  });
});

describe('bus: system status', () => {
  it('reports subscribers, retention, and the newest event id as bus.lastEventId, also after a restart', async () => {
    const t = await start(undefined, { CONSOLE_EVENT_RETENTION: '1234' });
    const status = async (s: TestService) => {
      const res = await s.get('/api/system-status');
      expect(res.status).toBe(200);
      return ((await res.json()) as { bus: Record<string, unknown> }).bus;
    };
    expect(await status(t)).toMatchObject({ subscribers: 0, retention: 1234, lastEventId: '0' });
    const evs = publishMany(t, 7);
    expect(await status(t)).toMatchObject({ lastEventId: (evs[6] as BusEvent).id });
    await t.stop();

    const again = await start(t.tmp, { CONSOLE_EVENT_RETENTION: '1234' });
    const newest = (await allEvents(again.url)).at(-1);
    // The newest event is still the one published before the restart; an operator comparing
    // this with the ids on the stream must not see an id that no event has.
    expect(newest?.id).toBe((evs[6] as BusEvent).id);
    expect(await status(again)).toMatchObject({ lastEventId: newest?.id, retention: 1234 });
  });
});
