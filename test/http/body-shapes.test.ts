/**
 * `__proto__` in request bodies. `JSON.parse` makes a `__proto__` member an
 * own member; copying the body by assignment then set the copy's prototype instead: at the top
 * level the member was renamed (`_Proto__`) or its members became inherited, nested it was
 * silently dropped (zod rebuilds records by assignment) and the rest stored as if complete.
 * The rule now: a body holding a `__proto__` member at any depth is refused with a 422 naming
 * where, on every route, and nothing is stored; `constructor`, `prototype` and every other
 * name are ordinary data, stored and served back exactly.
 *
 * Through the real server on port 0 (a temp copy of the sample store); bodies are written as
 * JSON text, as a client sends them (an object literal with `__proto__` would not hold one).
 */
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from '../../src/http/route.js';
import { send, type Issue } from '../console/helpers.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
let bodyRoutes: RouteSpec[];
beforeAll(async () => {
  t = await startTestService();
  bodyRoutes = t.service.api.routes.filter((r) => r.body !== undefined);
});
afterAll(async () => {
  await t.close();
});

/** A valid value for each path parameter of the body routes. */
const PARAMS: Record<string, string> = {
  project: 'harbor-lights',
  proposalId: 'prop_000000000000',
  takeId: 'tk_0002',
  entryId: 'style-palette',
  wid: 'proto-test',
};

const target = (r: RouteSpec) => r.path.replace(/:([A-Za-z]+)/g, (_m, p: string) => PARAMS[p] ?? 'x') + (r.path === '/api/selection' ? '?projectId=harbor-lights' : '');

async function sendRaw(method: string, path: string, text: string | Buffer, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const res = await fetch(t.url + path, { method: method.toUpperCase(), headers: { 'content-type': 'application/json', ...headers }, body: text });
  const body = await res.text();
  return { status: res.status, json: body ? JSON.parse(body) : undefined };
}

/** Bodies holding `__proto__`, as JSON text, with the `loc` the 422 must name. */
const PROTO_BODIES: [string, string, (string | number)[]][] = [
  ['at the top level', '{"__proto__": {"polluted": true}}', ['body', '__proto__']],
  ['at the top level, beside valid members', '{"target": "x", "__proto__": 1, "projectId": "harbor-lights"}', ['body', '__proto__']],
  ['nested in an object', '{"meta": {"a": 1, "__proto__": {"polluted": true}}}', ['body', 'meta', '__proto__']],
  ['nested in an array', '{"state": [1, {"b": [{"__proto__": null}]}]}', ['body', 'state', 1, 'b', 0, '__proto__']],
  ['in a body that is an array', '[{"__proto__": []}]', ['body', 0, '__proto__']],
  ['spelt with JSON escapes', '{"extra": {"\\u005f\\u005fproto\\u005f\\u005f": "x"}}', ['body', 'extra', '__proto__']],
  ['in a snake_case member', '{"project_id": "harbor-lights", "extra_data": {"__proto__": {}}}', ['body', 'extra_data', '__proto__']],
];

describe('a body holding __proto__', () => {
  it('the routes that take a body are the ones this test knows', () => {
    expect(bodyRoutes.map((r) => `${r.method} ${r.path}`).sort()).toEqual(
      [
        'post /api/chat',
        'post /api/clicks',
        'post /api/generate/:project',
        'post /api/internal/bus',
        'post /api/memory/:entryId/toggle',
        'post /api/proposals',
        'post /api/proposals/:proposalId/approve',
        'post /api/proposals/:proposalId/decision',
        'post /api/proposals/:proposalId/defer',
        'post /api/proposals/:proposalId/reject',
        'post /api/proposals/generate',
        'post /api/slash/dispatch',
        'post /api/takes/:takeId/action',
        'post /api/ttyd/start',
        'post /api/ttyd/stop',
        'post /api/workspace-state/:wid/report',
        'put /api/selection',
        'put /api/workspace-state/:wid',
      ].sort(),
    );
  });

  it.each(PROTO_BODIES)('is refused with a 422 naming where, on every route that takes a body: %s', async (_what, text, loc) => {
    for (const r of bodyRoutes) {
      const res = await sendRaw(r.method, target(r), text);
      expect([r.path, res.status, res.json]).toEqual([
        r.path,
        422,
        { detail: [{ loc, msg: expect.stringContaining('"__proto__" is not accepted'), type: 'forbidden_member' }], code: 'validation_failed' },
      ]);
    }
    // Nothing leaked into the service's own objects (it runs in this process).
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('is refused whatever the body’s encoding and the spelling of its media type (gzip, deflate, a charset, upper case)', async () => {
    const text = '{"payload": {"deep": {"__proto__": {"polluted": true}}}}';
    const loc = ['body', 'payload', 'deep', '__proto__'];
    const variants: [Buffer | string, Record<string, string>][] = [
      [zlib.gzipSync(text), { 'content-encoding': 'gzip' }],
      [zlib.deflateSync(text), { 'content-encoding': 'deflate' }],
      [text, { 'content-type': 'application/json; charset=utf-8' }],
      [Buffer.from(text, 'utf8'), { 'content-type': 'APPLICATION/JSON' }],
    ];
    for (const [body, headers] of variants) {
      const res = await sendRaw('post', '/api/internal/bus', body, headers);
      expect([headers, res.status, res.json.detail?.[0]?.loc]).toEqual([headers, 422, loc]);
    }
  });

  it('is not confused with names that only look like it: they are data (or, where a route lists its members, unknown ones)', async () => {
    for (const name of ['__PROTO__', '__proto', 'proto', '_proto_', '__proto__ ', 'x__proto__']) {
      const res = await sendRaw('post', '/api/internal/bus', JSON.stringify({ severity: 'info', scope: 'proto/test', summary: 's', payload: { [name]: { a: 1 } } }));
      expect([name, res.status]).toEqual([name, 202]);
    }
  });
});

/** Members named after Object.prototype's own, and near-misses of `__proto__`: ordinary data. */
const TRICKY = {
  constructor: { prototype: { polluted: true } },
  prototype: 1,
  toString: 'x',
  hasOwnProperty: null,
  valueOf: [1, { constructor: 'nested' }],
  isPrototypeOf: false,
  __PROTO__: { a: 1 },
  __proto: 2,
  __defineGetter__: 'g',
};

/**
 * Every route that stores a caller's free-form JSON: how to send it with a value `v` (as JSON
 * text, so that `__proto__` can be planted in it), where the stored value is read back, and
 * the member a planted `__proto__` sits under.
 */
interface Store {
  readonly name: string;
  readonly send: (v: string) => Promise<{ status: number; json: any }>;
  readonly readBack: () => Promise<unknown>;
  readonly loc: (string | number)[];
}

const events = async (scope: string) => ((await send(t, 'GET', `/api/events?scopePrefix=${scope}&limit=500`)).json as { payload: Record<string, unknown> }[]).map((e) => e.payload);
const lastEventPayload = async (scope: string) => (await events(scope)).at(-1);
const without = (o: Record<string, unknown> | undefined, ...keys: string[]) => (o ? Object.fromEntries(Object.entries(o).filter(([k]) => !keys.includes(k))) : o);

let proposal = '';
const STORES: Store[] = [
  {
    name: 'clicks meta',
    send: (v) => sendRaw('post', '/api/clicks', `{"projectId": "harbor-lights", "target": "proto", "meta": ${v}}`),
    readBack: async () => ((await send(t, 'GET', '/api/clicks?projectId=harbor-lights&limit=1')).json as { meta: unknown }[])[0]?.meta,
    loc: ['body', 'meta'],
  },
  {
    name: 'proposal payload',
    send: async (v) => {
      const r = await sendRaw('post', '/api/proposals', `{"title": "proto", "payload": ${v}}`);
      if (r.status === 201) proposal = r.json.proposalId;
      return r;
    },
    readBack: async () => ((await send(t, 'GET', '/api/proposals?limit=1')).json as { payload: unknown }[])[0]?.payload,
    loc: ['body', 'payload'],
  },
  {
    name: 'decision extra (approve)',
    send: (v) => sendRaw('post', `/api/proposals/${proposal}/approve`, `{"extra": ${v}}`),
    readBack: async () => ((await send(t, 'GET', `/api/proposals/${proposal}/decisions`)).json as { extra: unknown }[]).at(-1)?.extra,
    loc: ['body', 'extra'],
  },
  {
    name: 'decision extra (decision), and its event',
    send: (v) => sendRaw('post', `/api/proposals/${proposal}/decision`, `{"decision": "rejected", "scope": "proto/decision", "extra": ${v}}`),
    readBack: async () => without(await lastEventPayload('proto/decision'), 'proposal_id', 'decision', 'kind', 'deferred_execution'),
    loc: ['body', 'extra'],
  },
  {
    name: 'take action extra (its event)',
    send: (v) => sendRaw('post', '/api/takes/tk_0002/action', `{"projectId": "harbor-lights", "action": "noted", "scope": "proto/take", "extra": ${v}}`),
    readBack: async () => without(await lastEventPayload('proto/take'), 'take_id', 'action'),
    loc: ['body', 'extra'],
  },
  {
    name: 'memory toggle extra (its event)',
    send: (v) => sendRaw('post', '/api/memory/style-palette/toggle', `{"on": false, "scope": "proto/memory", "extra": ${v}}`),
    readBack: async () => without(await lastEventPayload('proto/memory'), 'entry_id', 'on'),
    loc: ['body', 'extra'],
  },
  {
    name: 'workspace state',
    send: async (v) => {
      const current = await send(t, 'GET', '/api/workspace-state/proto-ws');
      return sendRaw('put', '/api/workspace-state/proto-ws', `{"revision": ${current.status === 200 ? current.json.revision : 0}, "state": ${v}}`);
    },
    readBack: async () => (await send(t, 'GET', '/api/workspace-state/proto-ws')).json?.state,
    loc: ['body', 'state'],
  },
  {
    name: 'workspace report blob',
    send: (v) => sendRaw('post', '/api/workspace-state/proto-ws/report', `{"blob": ${v}}`),
    readBack: async () => ((await send(t, 'GET', '/api/workspace-state/proto-ws/reports')).json as { blob: unknown }[])[0]?.blob,
    loc: ['body', 'blob'],
  },
  {
    name: 'selection members',
    send: (v) => sendRaw('put', '/api/selection?projectId=night-market', `{"beatId": "b01", "panel": ${v}}`),
    readBack: async () => (await send(t, 'GET', '/api/selection?projectId=night-market')).json.selection?.panel,
    loc: ['body', 'panel'],
  },
  {
    name: 'internal bus payload',
    send: (v) => sendRaw('post', '/api/internal/bus', `{"severity": "info", "scope": "proto/bus", "summary": "proto", "payload": ${v}}`),
    readBack: () => lastEventPayload('proto/bus'),
    loc: ['body', 'payload'],
  },
];

describe('free-form data on every route that stores it', () => {
  it.each(STORES.map((s) => [s.name, s] as const))('%s: constructor, prototype and the like are stored and served back exactly', async (_name, s) => {
    const r = await s.send(JSON.stringify(TRICKY));
    expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
    expect(await s.readBack()).toEqual(TRICKY);
    // Own members, not inherited ones: served JSON is parsed here, so compare the member names too.
    expect(Object.keys((await s.readBack()) as object).sort()).toEqual(Object.keys(TRICKY).sort());
  });

  it.each(STORES.map((s) => [s.name, s] as const))('%s: a nested __proto__ is refused (422 naming where) and nothing is stored', async (_name, s) => {
    const before = JSON.stringify(await s.readBack());
    const planted = [
      [`{"a": 1, "__proto__": {"polluted": true}}`, [...s.loc, '__proto__']],
      [`{"a": {"b": [0, {"__proto__": {}}]}}`, [...s.loc, 'a', 'b', 1, '__proto__']],
    ] as const;
    for (const [v, loc] of planted) {
      const r = await s.send(v);
      expect([r.status, (r.json.detail as Issue[])[0]]).toEqual([422, { loc, msg: expect.any(String), type: 'forbidden_member' }]);
      expect(JSON.stringify(await s.readBack())).toBe(before);
    }
  });
});

describe('the OpenAPI document', () => {
  it('says on every route that takes a body that __proto__ is refused', async () => {
    type Op = { requestBody?: { description?: string }; responses: Record<string, { description: string }> };
    const doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as { paths: Record<string, Record<string, Op>> };
    const rule = '`__proto__` at any depth (`forbidden_member`';
    for (const r of bodyRoutes) {
      const op = doc.paths[r.path.replace(/:([A-Za-z]+)/g, '{$1}')]?.[r.method];
      expect([r.path, op?.requestBody?.description]).toEqual([r.path, expect.stringContaining(rule)]);
      // The framework's 422, where the route does not document its own.
      if (!r.answers[422]) expect([r.path, op?.responses['422']?.description]).toEqual([r.path, expect.stringContaining(rule)]);
    }
  });
});

describe('a query member named __proto__', () => {
  it('is an ordinary (unknown) query member: ignored, the answer unchanged', async () => {
    const plain = await send(t, 'GET', '/api/clicks?projectId=harbor-lights&limit=2');
    for (const q of ['__proto__=x', '__proto__=x&__proto__=y', '__proto__[limit]=1', 'constructor=x&prototype=y']) {
      const r = await send(t, 'GET', `/api/clicks?projectId=harbor-lights&limit=2&${q}`);
      expect([q, r.status, r.json]).toEqual([q, 200, plain.json]);
    }
  });
});
