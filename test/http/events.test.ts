/**
 * `GET /api/events` through the real server on port 0 with a real temp SQLite file
 * (spec: Read routes, `/api/events`; Limits; api-decisions.md, Events and Validation errors).
 * Events are published on the running service's own bus.
 */
import type { IncomingMessage } from 'node:http';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { BusEvent, EventInput } from '../../src/bus/event.js';
import type { EngineEvent } from '../helpers/events.js';
import { startTestService, type TestService, publishOn } from '../helpers/service.js';

const EVENT_KEYS = ['detail', 'id', 'payload', 'scope', 'severity', 'summary', 'ts'];
const TS = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

let t: TestService;
beforeEach(async () => {
  // An empty store: no engine warnings at start-up, so the bus holds only what a test publishes.
  t = await startTestService({ store: 'empty' });
});
afterEach(async () => {
  await t.close();
});

const publish = (input: EventInput): BusEvent => publishOn(t, input);

/** Publishes `n` events; `make(i)` gives the i-th (0-based) input. */
function publishMany(n: number, make: (i: number) => Partial<EventInput> = () => ({})): BusEvent[] {
  return Array.from({ length: n }, (_, i) => publish({ severity: 'info', scope: 'test/list', summary: `e${i}`, ...make(i) }));
}

async function list(query: string): Promise<EngineEvent[]> {
  const res = await t.get(`/api/events${query ? `?${query}` : ''}`);
  expect(res.status, await res.clone().text()).toBe(200);
  return (await res.json()) as EngineEvent[];
}

const ids = (evs: readonly { id: string }[]) => evs.map((e) => e.id);

async function expect422(query: string): Promise<{ loc: (string | number)[]; msg: string; type: string }[]> {
  const res = await t.get(`/api/events?${query}`);
  expect(res.status, `${query}: ${await res.clone().text()}`).toBe(422);
  const body = (await res.json()) as { detail: { loc: (string | number)[]; msg: string; type: string }[] };
  expect(Array.isArray(body.detail), query).toBe(true);
  expect(body.detail.length, query).toBeGreaterThan(0);
  for (const issue of body.detail) {
    expect(Object.keys(issue).sort(), query).toEqual(['loc', 'msg', 'type']);
    expect(typeof issue.msg, query).toBe('string');
    expect(issue.msg.length, query).toBeGreaterThan(0);
    expect(typeof issue.type, query).toBe('string');
    expect(issue.type.length, query).toBeGreaterThan(0);
  }
  return body.detail;
}

describe('GET /api/events: event shape', () => {
  it('serves id, ts, severity, scope, summary, detail (null when absent) and payload ({} when absent), nothing else', async () => {
    const bare = publish({ severity: 'warning', scope: 'test/shape', summary: 'bare' });
    const full = publish({
      severity: 'failure',
      scope: 'test/shape',
      summary: 'full',
      detail: 'some detail',
      payload: { n: 1, nested: { ok: true }, list: [1, 'two'] },
    });

    const evs = await list('');
    expect(evs).toHaveLength(2);
    for (const e of evs) {
      expect(Object.keys(e).sort()).toEqual(EVENT_KEYS);
      expect(e.id).toMatch(/^\d+$/);
      expect(e.ts).toMatch(TS);
      expect(new Date(e.ts).toISOString()).toBe(e.ts); // a real UTC instant, not just the right look
    }
    const [b, f] = evs as [EngineEvent, EngineEvent];
    expect(b).toEqual({ ...bare, detail: null, payload: {} });
    expect(f).toEqual({ ...full, detail: 'some detail', payload: { n: 1, nested: { ok: true }, list: [1, 'two'] } });
    // What `publish` hands back is exactly what the list serves.
    expect(evs).toEqual([bare, full]);
  });

  it('answers JSON', async () => {
    publishMany(1);
    const res = await t.get('/api/events');
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
  });

  it('gives every event a distinct, strictly increasing decimal id', async () => {
    const published = publishMany(50);
    await new Promise((r) => setImmediate(r));
    published.push(...publishMany(50));
    const nums = ids(await list('limit=500')).map(Number);
    expect(nums).toHaveLength(100);
    for (let i = 1; i < nums.length; i++) expect(nums[i]).toBeGreaterThan(nums[i - 1] as number);
    expect(nums.map(String)).toEqual(ids(published));
  });
});

describe('GET /api/events: order, limit and sinceId', () => {
  it('without sinceId answers the newest `limit` events in ascending id order', async () => {
    const published = publishMany(30);
    expect(ids(await list('limit=10'))).toEqual(ids(published.slice(20)));
    expect(ids(await list('limit=1'))).toEqual(ids(published.slice(29)));
  });

  it('with sinceId answers the first `limit` events after it, ascending', async () => {
    const published = publishMany(30);
    const since = (published[4] as BusEvent).id;
    expect(ids(await list(`sinceId=${since}&limit=10`))).toEqual(ids(published.slice(5, 15)));
    expect(ids(await list(`sinceId=${since}`))).toEqual(ids(published.slice(5)));
    expect(ids(await list('sinceId=0&limit=3'))).toEqual(ids(published.slice(0, 3)));
    expect(await list(`sinceId=${(published[29] as BusEvent).id}`)).toEqual([]);
    // A sinceId past every id is not an error: nothing is newer.
    expect(await list('sinceId=999999999999999')).toEqual([]);
  });

  it('defaults limit to 200 and accepts 1 and 500', async () => {
    const published = publishMany(600);
    expect(ids(await list(''))).toEqual(ids(published.slice(400)));
    expect(ids(await list('sinceId=0'))).toEqual(ids(published.slice(0, 200)));
    expect(ids(await list('limit=500'))).toEqual(ids(published.slice(100)));
    expect(ids(await list('sinceId=0&limit=500'))).toEqual(ids(published.slice(0, 500)));
    expect(ids(await list('limit=1'))).toEqual(ids(published.slice(599)));
  });

  it('rejects limit 0, 501, -1, 1.5 and abc with a 422 at [query, limit]', async () => {
    publishMany(3);
    for (const bad of ['0', '501', '-1', '1.5', 'abc', '']) {
      const detail = await expect422(`limit=${bad}`);
      expect(
        detail.map((d) => d.loc),
        `limit=${bad}`,
      ).toEqual([['query', 'limit']]);
    }
  });

  it('rejects a sinceId that is not decimal digits with a 422 at [query, sinceId]', async () => {
    for (const bad of ['abc', '-1', '1.5', '1e3', '']) {
      const detail = await expect422(`sinceId=${encodeURIComponent(bad)}`);
      expect(
        detail.map((d) => d.loc),
        `sinceId=${bad}`,
      ).toEqual([['query', 'sinceId']]);
    }
  });
});

describe('GET /api/events: filters', () => {
  const SEVS = ['info', 'success', 'failure', 'warning', 'fallback'] as const;

  it('filters by one severity, and by several when `severities` repeats', async () => {
    const published = publishMany(50, (i) => ({ severity: SEVS[i % 5] }));
    const of = (...sev: string[]) => ids(published.filter((e) => sev.includes(e.severity)));

    expect(ids(await list('severities=failure'))).toEqual(of('failure'));
    expect(ids(await list('severities=info&severities=failure'))).toEqual(of('info', 'failure'));
    expect(ids(await list('severities=fallback&severities=warning&severities=success'))).toEqual(of('fallback', 'warning', 'success'));
    // A repeated value is the same filter, not an error.
    expect(ids(await list('severities=info&severities=info'))).toEqual(of('info'));
    for (const e of await list('severities=warning')) expect(e.severity).toBe('warning');
  });

  it('applies `limit` after the filters: the newest `limit` events that pass them', async () => {
    // 40 failures, then 100 infos: the newest 5 failures are far from the newest 5 events.
    const failures = publishMany(40, () => ({ severity: 'failure' }));
    publishMany(100);
    expect(ids(await list('severities=failure&limit=5'))).toEqual(ids(failures.slice(35)));
    expect(ids(await list(`severities=failure&limit=5&sinceId=${(failures[9] as BusEvent).id}`))).toEqual(ids(failures.slice(10, 15)));
  });

  it('matches scopePrefix against the start of the scope only', async () => {
    const scopes = ['engine/generation', 'engine/memory', 'chat/engine/x', 'engineering', 'xengine/a', 'engine'];
    const published = publishMany(scopes.length * 3, (i) => ({ scope: scopes[i % scopes.length] }));
    const starting = (p: string) => ids(published.filter((e) => e.scope.startsWith(p)));

    const generation = await list('scopePrefix=engine/generation');
    expect(generation.map((e) => e.scope)).toEqual(['engine/generation', 'engine/generation', 'engine/generation']);
    expect(ids(await list('scopePrefix=engine/'))).toEqual(starting('engine/'));
    expect(ids(await list('scopePrefix=engine'))).toEqual(starting('engine'));
    expect((await list('scopePrefix=engine/')).map((e) => e.scope)).not.toContain('chat/engine/x');
    expect(ids(await list('scopePrefix=chat'))).toEqual(starting('chat'));
    expect(await list('scopePrefix=generation')).toEqual([]);
    expect(await list('scopePrefix=ENGINE')).toEqual([]); // case matters
  });

  it('treats scopePrefix literally (no LIKE wildcards) and handles non-ASCII prefixes', async () => {
    const published = publishMany(4, (i) => ({ scope: ['a_b/x', 'axb/x', 'équipe/é', 'a%/x'][i] }));
    expect(ids(await list('scopePrefix=a_'))).toEqual(ids([published[0] as BusEvent]));
    expect(ids(await list(`scopePrefix=${encodeURIComponent('a%')}`))).toEqual(ids([published[3] as BusEvent]));
    expect(ids(await list(`scopePrefix=${encodeURIComponent('équipe/')}`))).toEqual(ids([published[2] as BusEvent]));
  });

  it('combines severities, scopePrefix, sinceId and limit', async () => {
    const published = publishMany(60, (i) => ({ severity: SEVS[i % 5], scope: i % 2 === 0 ? 'a/x' : 'b/x' }));
    const pass = published.filter((e) => (e.severity === 'info' || e.severity === 'failure') && e.scope.startsWith('a/'));
    const since = (pass[1] as BusEvent).id;
    expect(ids(await list(`severities=info&severities=failure&scopePrefix=a/&sinceId=${since}&limit=3`))).toEqual(ids(pass.slice(2, 5)));
    expect(ids(await list('severities=info&severities=failure&scopePrefix=a/&limit=2'))).toEqual(ids(pass.slice(-2)));
  });

  it('rejects an unknown severity, alone or among valid ones, with a 422 at [query, severities, …]', async () => {
    for (const q of ['severities=bogus', 'severities=INFO', 'severities=info&severities=bogus', 'severities=']) {
      const detail = await expect422(q);
      for (const d of detail) expect(d.loc.slice(0, 2), q).toEqual(['query', 'severities']);
    }
  });
});

describe('GET /api/events: read-your-writes', () => {
  it('includes an event published just before the request', async () => {
    const before = publishMany(3);
    const e = publish({ severity: 'success', scope: 'test/ryw', summary: 'just before' });
    expect(ids(await list(''))).toEqual(ids([...before, e]));
  });

  it('includes an event published while the request is being received, before the bus had a tick to flush', async () => {
    // A listener that runs before Express, in the same tick as the route handler: the event is
    // still in the bus queue (flushes run on setImmediate) when the handler reads.
    const published: BusEvent[] = [];
    const hook = (req: IncomingMessage) => {
      if (req.url?.startsWith('/api/events')) published.push(publish({ severity: 'info', scope: 'test/ryw', summary: `during ${req.url}` }));
    };
    t.service.server.prependListener('request', hook);
    try {
      const newest = await list('');
      expect(ids(newest)).toEqual(ids(published));
      const after = await list('sinceId=0');
      expect(ids(after)).toEqual(ids(published));
      const filtered = await list('severities=info&scopePrefix=test/ryw');
      expect(ids(filtered)).toEqual(ids(published));
    } finally {
      t.service.server.off('request', hook);
    }
  });
});
