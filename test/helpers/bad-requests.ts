/**
 * fast-check arbitraries of hostile requests for every declared route:
 * the routes come from `api.routes`, so a route added later is covered without a change here.
 * Each request aims at one route and spoils it in one or more ways: its path parameters
 * (traversal forms, encodings, NUL, backslashes, unicode, ids up to 10 KB), its query, its
 * method, its body (wrong types, missing and extra members, deep nesting, `__proto__`
 * members, huge strings, invalid JSON, bodies past the size limit, compressed bombs) and its
 * content type.
 * Most requests stay close to valid so that they reach the handlers, not only the validators.
 */
import zlib from 'node:zlib';
import fc from 'fast-check';
import type { z } from 'zod';
import type { RouteSpec } from '../../src/http/route.js';
import type { RawReq } from './raw-client.js';

/** Where the sentinels are planted, relative to the store root and its parent. */
export interface Targets {
  /** Absolute path of the sentinel outside the store. */
  readonly outsideAbs: string;
  /** Its name, next to the store root (`<store>/../<name>`). */
  readonly outsideName: string;
  /** Name of the sentinel inside a project, beside its `media/` folder. */
  readonly insideName: string;
  /** A dotfile inside the project's `media/` folder (dotfiles are denied). */
  readonly dotName: string;
  /** CONSOLE_MAX_BODY_BYTES of the service under test. */
  readonly maxBodyBytes: number;
}

/** A generated request, with the route it aims at. */
export interface AimedReq extends RawReq {
  readonly route: RouteSpec;
  /** How it was spoiled, for the figures and for reading a failure. */
  readonly kind: string;
}

/** Valid and plausible values per member or parameter name: requests that get far. */
const POOLS: Record<string, readonly unknown[]> = {
  projectId: ['harbor-lights', 'night-market', 'old-pilot', 'nobody'],
  // A valid `project` starts a real job (a node process): rarer here, to keep the run short.
  project: ['harbor-lights', '../harbor-lights', 'harbor lights', '', '-x', '.', 'a/b', 'x'.repeat(129), '%2e%2e'],
  episodeId: ['1', '2', '9'],
  sceneId: ['main', 'other'],
  beatId: ['b01', 'b02', 'b03', 'b99'],
  takeId: ['tk_0001', 'tk_0004', 'tk_0900'],
  shotId: ['sh010', 'sh060', 'sh999', ''],
  entryId: ['style-palette', 'handheld-only', 'nope'],
  wid: ['main', 'ws-2'],
  file: ['tk_0001.svg', 'tk_0002.svg', 'missing.png'],
  proposalId: ['gen_000000000000', 'prop_000000000000', 'gen_zz'],
  action: ['marked_primary', 'circled_toggled', 'rejected', 'noted'],
  decision: ['approved', 'rejected', 'deferred', 'maybe'],
  severity: ['info', 'success', 'failure', 'warning', 'fallback', 'error'],
  severities: ['info', 'failure', 'nope'],
  scope: ['ops', 'engine/render', 'chat/slash', '/x', 'a//b'],
  scopePrefix: ['engine', 'chat/', ''],
  command: ['/help', '/status', '/generate sh060', '/GENERATE', '/rm -rf /', 'help', '/'],
  message: ['hi', ''],
  title: ['Reshoot', ''],
  kind: ['ReshootProposal', 'GenerationProposal', ''],
  summary: ['hello', ''],
  on: [true, false],
  revision: [0, 1, 2, -1],
  target: ['btn-approve', ''],
  limit: ['1', '500', '0', '-1', 'abc', '1e2', '0x10', '99999999999999999', ''],
  sinceId: ['0', '5', 'abc', '-1', '1'.repeat(30)],
  state: ['running', 'exited ok', 'lost', 'zombie'],
  model: ['m1', 'bad model', ''],
  dryRun: [true, false],
  modality: ['video_i2v'],
  reason: ['bad', ''],
};

/** Traversal forms and other hostile identifiers, given the planted names. */
function hostileIds(t: Targets): string[] {
  const o = t.outsideName;
  const i = t.insideName;
  return [
    '..',
    '.',
    '...',
    '%2e%2e',
    '%2E%2E',
    '.%2e',
    '%2e.',
    '%252e%252e',
    '%c0%ae%c0%ae',
    '%ef%bc%8e%ef%bc%8e',
    `../${i}`,
    `..%2F${i}`,
    `..%2f${i}`,
    `%2e%2e%2f${i}`,
    `%2e%2e/${i}`,
    `..%5c${i}`,
    `..\\${i}`,
    `media/../${i}`,
    `../../${o}`,
    `../../../${o}`,
    `..%2F..%2F${o}`,
    `..%2f..%2f..%2f${o}`,
    `%2e%2e%2f%2e%2e%2f${o}`,
    `..\\..\\${o}`,
    `%2e%2e%5c%2e%2e%5c${o}`,
    `....//....//${o}`,
    `..;/..;/${o}`,
    t.outsideAbs,
    encodeURIComponent(t.outsideAbs),
    t.outsideAbs.replace(/\//g, '\\'),
    `%2F${encodeURIComponent(t.outsideAbs.slice(1))}`,
    '/etc/passwd',
    '%2Fetc%2Fpasswd',
    '%2fetc%2fpasswd',
    'C:\\Windows\\win.ini',
    'file:%2F%2F%2Fetc%2Fpasswd',
    'a/b',
    'a%2Fb',
    'a%2fb',
    '%2F',
    '/',
    'a\\b',
    '%5C',
    '%5c',
    '\\',
    'a%00b',
    '%00',
    `tk_0001.svg%00.png`,
    `${i}%00`,
    'x%00..%2F',
    t.dotName,
    `%2E${t.dotName.slice(1)}`,
    '.hidden',
    '.env',
    '-dash',
    '_under',
    '~',
    '~root',
    '$HOME',
    '${PATH}',
    '`id`',
    '$(id)',
    'CON',
    'NUL',
    'aux.txt',
    'x'.repeat(129),
    'a..b',
    'sp ace',
    'semi;colon',
    'q?x=1',
    'h#frag',
    '%',
    '%zz',
    '%2',
    '%%32%65',
    'ḧarbor',
    '𝔥arbor-lights',
    'ハーバー',
    'harbor\u200blights',
    'harbor\u202elights',
    'Ａ',
    'tk_0001.svg\u0000',
  ];
}

const SNAKE = (k: string) => k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Percent-encodes what Node's client refuses to put in a request target (controls, space, > 0xff). */
function sendable(s: string): string {
  return s.replace(/[^\u0021-\u007e]/gu, (c) => encodeURIComponent(c));
}

/** A path-parameter value: a plausible id, a hostile one, random text, or a very long id. */
export function idArb(name: string, t: Targets): fc.Arbitrary<string> {
  const pool = (POOLS[name] ?? ['x1']) as string[];
  const hostile = hostileIds(t);
  const text = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.string({ unit: 'grapheme', maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
    fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._-]{0,30}$/),
  );
  const long = fc
    .record({ n: fc.integer({ min: 129, max: 10_240 }), unit: fc.constantFrom('a', '../', '%2e%2e%2f', 'é', '\\', '%00') })
    .map(({ n, unit }) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n));
  return fc.oneof(
    { arbitrary: fc.constantFrom(...pool), weight: 5 },
    { arbitrary: fc.constantFrom(...hostile), weight: 5 },
    { arbitrary: fc.tuple(fc.constantFrom(...hostile), fc.constantFrom(...pool)).map(([h, p]) => `${p}/${h}`), weight: 1 },
    { arbitrary: text, weight: 2 },
    { arbitrary: long, weight: 1 },
  );
}

/** How a parameter value goes into the path: as is (hostile forms kept), or encoded. */
function placeArb(value: string): fc.Arbitrary<string> {
  return fc.constantFrom(sendable(value), encodeURIComponent(value), sendable(value).replace(/%/g, '%25'));
}

/** Unwraps optional/nullable/default/pipe… down to the schema that describes the value. */
function core(schema: z.ZodType): z.ZodType {
  let s: any = schema;
  for (let i = 0; i < 20; i++) {
    const def = s?._zod?.def;
    if (!def) break;
    if (['optional', 'nullable', 'default', 'prefault', 'catch', 'readonly', 'nonoptional'].includes(def.type)) s = def.innerType;
    else if (def.type === 'pipe') s = def.in._zod.def.type === 'transform' ? def.out : def.in;
    else if (def.type === 'lazy') s = def.getter();
    else break;
  }
  return s as z.ZodType;
}

/** The members of an object schema (empty for anything else). */
export function shapeOf(schema: z.ZodType | undefined): Record<string, z.ZodType> {
  if (!schema) return {};
  const def: any = (core(schema) as any)._zod.def;
  return def.type === 'object' ? (def.shape as Record<string, z.ZodType>) : {};
}

const junk = fc.jsonValue({ maxDepth: 3 });

/** A plausible value for a member: its pool, what its schema allows, or junk. */
function memberArb(name: string, schema: z.ZodType, depth: number): fc.Arbitrary<unknown> {
  const def: any = (core(schema) as any)._zod.def;
  const pool = POOLS[name];
  let typed: fc.Arbitrary<unknown>;
  switch (def.type) {
    case 'string':
      typed = fc.oneof(fc.constantFrom(...((pool as string[] | undefined) ?? ['x'])), fc.string({ maxLength: 30 }));
      break;
    case 'number':
    case 'int':
      typed = fc.oneof(fc.constantFrom(0, 1, -1, 2 ** 53, 1e308, 0.5), fc.integer());
      break;
    case 'boolean':
      typed = fc.boolean();
      break;
    case 'enum':
      typed = fc.constantFrom(...Object.values(def.entries as Record<string, unknown>));
      break;
    case 'literal':
      typed = fc.constantFrom(...(def.values as unknown[]));
      break;
    case 'object':
      typed = depth > 2 ? fc.constant({}) : objectArb(def.shape as Record<string, z.ZodType>, depth + 1);
      break;
    case 'union':
      typed = fc.oneof(...(def.options as z.ZodType[]).map((o) => memberArb(name, o, depth + 1)));
      break;
    case 'array':
      typed = fc.array(memberArb(name, def.element as z.ZodType, depth + 1), { maxLength: 3 });
      break;
    default:
      typed = junk;
  }
  return pool
    ? fc.oneof({ arbitrary: fc.constantFrom(...pool), weight: 3 }, { arbitrary: typed, weight: 2 }, { arbitrary: junk, weight: 1 })
    : fc.oneof({ arbitrary: typed, weight: 4 }, { arbitrary: junk, weight: 1 });
}

/** An object close to the schema's shape: some members dropped, some added, names in either case. */
function objectArb(shape: Record<string, z.ZodType>, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const keys = Object.keys(shape);
  const members = fc.record(Object.fromEntries(keys.map((k) => [k, memberArb(k, shape[k] as z.ZodType, depth)])));
  const extra = fc.dictionary(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'id', 'ts', 'toString', 'extra'), fc.string({ maxLength: 10 })), junk, { maxKeys: 2 });
  // Most often every member is there, so that the request passes validation.
  const dropped = fc.oneof({ arbitrary: fc.constant([] as string[]), weight: 3 }, { arbitrary: fc.subarray(keys), weight: 1 });
  return fc.record({ m: members, drop: dropped, extra: fc.option(extra, { freq: 4 }), snake: fc.boolean() }).map(({ m, drop, extra: x, snake }) => {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(m)) if (!drop.includes(k)) out[snake ? SNAKE(k) : k] = v;
    // JSON text is built later: `__proto__` as an own member, as a client would send it.
    if (x) for (const [k, v] of Object.entries(x)) Object.defineProperty(out, k, { value: v, enumerable: true, configurable: true, writable: true });
    return out;
  });
}

const INVALID_JSON = ['{', '{"a":', 'nul', "{'a':1}", '[1,]', '{"a":1}}', '\u0000', 'NaN', '01', '{"a":1,}', '"unterminated', '{"a":"\\x"}', '\ufeff{}', '{"a" 1}', '}{', 'undefined', '[', ']'];
const CONTENT_TYPES = [
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=X',
  'application/xml',
  'application/jsonx',
  'json',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=nope',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/json; charset=utf-8',
  '',
  '*/*',
  'application/*',
];

interface BodyPlan {
  readonly body?: Buffer;
  readonly headers: Record<string, string>;
  readonly kind: string;
}

const json = (v: unknown): Buffer => Buffer.from(JSON.stringify(v) ?? 'null', 'utf8');

/** A body for `route` (or for a route without one: sometimes a body anyway). */
export function bodyArb(route: RouteSpec, t: Targets): fc.Arbitrary<BodyPlan> {
  const J = { 'content-type': 'application/json' };
  const shape = shapeOf(route.body);
  const plausible = objectArb(shape);
  const limit = t.maxBodyBytes;
  const members = Object.keys(shape);
  const spot = members.length > 0 ? fc.constantFrom(...members) : fc.constant('state');
  const kinds: { arbitrary: fc.Arbitrary<BodyPlan>; weight: number }[] = [
    { arbitrary: plausible.map((o) => ({ body: json(o), headers: J, kind: 'plausible' })), weight: route.body ? 12 : 1 },
    { arbitrary: junk.map((v) => ({ body: json(v), headers: J, kind: 'random-json' })), weight: 3 },
    {
      // Deep nesting: arrays or objects some thousands of levels deep, within the size limit.
      arbitrary: fc
        .record({ depth: fc.integer({ min: 100, max: Math.floor((limit - 200) / 7) }), obj: fc.boolean(), at: spot, top: fc.boolean(), base: plausible })
        .map(({ depth, obj, at, top, base }) => {
          const nest = obj ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`;
          const text = top ? nest : JSON.stringify({ ...base, [at]: '\u0000NEST\u0000' }).replace('"\\u0000NEST\\u0000"', nest);
          return { body: Buffer.from(text), headers: J, kind: 'deep-nesting' };
        }),
      weight: 2,
    },
    {
      // A `__proto__` member at the top level, under one of the route's
      // members, or in an array there, in an otherwise plausible body: refused with a 422
      // `forbidden_member` on every route. Planted in the JSON text, as a client sends it.
      arbitrary: fc.record({ base: plausible, at: spot, where: fc.constantFrom('top', 'member', 'array'), inner: junk }).map(({ base, at, where, inner }) => {
        const value = JSON.stringify(inner) ?? 'null';
        const text =
          where === 'top'
            ? JSON.stringify({ '\u0000KEY\u0000': 0, ...base }).replace('"\\u0000KEY\\u0000":0', () => `"__proto__":${value}`)
            : // A function, so that `$` in the junk is not read as a replacement pattern.
              JSON.stringify({ ...base, [at]: '\u0000AT\u0000' }).replace('"\\u0000AT\\u0000"', () => (where === 'member' ? `{"a":1,"__proto__":${value}}` : `[0,{"__proto__":${value}}]`));
        return { body: Buffer.from(text), headers: J, kind: 'proto-member' };
      }),
      weight: 1,
    },
    {
      arbitrary: fc.record({ n: fc.integer({ min: 1_000, max: limit - 300 }), at: spot, base: plausible, ch: fc.constantFrom('x', 'é', '\u0000', '"', '😀') }).map(({ n, at, base, ch }) => ({
        body: json({ ...base, [at]: ch.repeat(Math.floor(n / Buffer.byteLength(JSON.stringify(ch)))) }),
        headers: J,
        kind: 'huge-string',
      })),
      weight: 2,
    },
    {
      // Past the limit: with its length announced, or streamed in chunks (no length known ahead).
      arbitrary: fc.record({ n: fc.integer({ min: limit + 1, max: limit * 3 }), chunked: fc.boolean(), base: plausible }).map(({ n, chunked, base }) => {
        const body = json({ ...base, pad: 'x'.repeat(n) });
        return { body, headers: chunked ? { ...J, 'transfer-encoding': 'chunked' } : J, kind: chunked ? 'over-limit-chunked' : 'over-limit' };
      }),
      weight: 1,
    },
    {
      arbitrary: fc.oneof(fc.constantFrom(...INVALID_JSON), fc.string({ unit: 'binary', maxLength: 50 })).map((s) => ({ body: Buffer.from(s), headers: J, kind: 'invalid-json' })),
      weight: 2,
    },
    { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 64 }).map((b) => ({ body: Buffer.from(b), headers: J, kind: 'random-bytes' })), weight: 1 },
    {
      arbitrary: fc.record({ ct: fc.constantFrom(...CONTENT_TYPES), base: plausible }).map(
        ({ ct, base }): BodyPlan => ({
          body: json(base),
          headers: ct === '' ? {} : { 'content-type': ct },
          kind: 'content-type',
        }),
      ),
      weight: 2,
    },
    { arbitrary: fc.constantFrom<BodyPlan>({ headers: {}, kind: 'no-body' }, { body: Buffer.alloc(0), headers: J, kind: 'empty-body' }), weight: 1 },
    {
      // Compressed bodies: a bomb that inflates past the limit, garbage, unknown encodings.
      arbitrary: fc.record({ enc: fc.constantFrom('gzip', 'deflate', 'br', 'identity', 'x-nope', 'gzip, gzip'), bomb: fc.boolean(), base: plausible }).map(({ enc, bomb, base }) => {
        const plain = bomb ? Buffer.from(JSON.stringify({ ...base, pad: ' '.repeat(limit * 4) })) : json(base);
        const body = enc === 'gzip' && bomb ? zlib.gzipSync(plain) : enc === 'deflate' ? zlib.deflateSync(plain).subarray(0, 40) : plain;
        return { body, headers: { ...J, 'content-encoding': enc }, kind: bomb && enc === 'gzip' ? 'gzip-bomb' : 'content-encoding' };
      }),
      weight: 1,
    },
  ];
  const any = fc.oneof(...kinds);
  // A read goes without a body most of the time, as clients send them.
  return route.body ? any : fc.oneof({ arbitrary: fc.constant<BodyPlan>({ headers: {}, kind: 'read' }), weight: 4 }, { arbitrary: any, weight: 1 });
}

/** A query string for `route`: its members with plausible, hostile or repeated values, plus junk. */
export function queryArb(route: RouteSpec, t: Targets): fc.Arbitrary<string> {
  const keys = Object.keys(shapeOf(route.query));
  const hostile = hostileIds(t);
  const value = (k: string) =>
    fc.oneof(
      { arbitrary: fc.constantFrom(...((POOLS[k] ?? ['x']) as unknown[]).map(String)), weight: 4 },
      { arbitrary: fc.constantFrom(...hostile), weight: 2 },
      { arbitrary: fc.string({ maxLength: 20 }).map(encodeURIComponent), weight: 1 },
    );
  const pair = (k: string) => fc.tuple(fc.constantFrom(k, SNAKE(k), `${k}[]`, k.toUpperCase()), value(k), fc.boolean()).map(([name, v, raw]) => `${name}=${raw ? sendable(v) : encodeURIComponent(v)}`);
  const pairs = keys.length > 0 ? fc.array(fc.oneof(...keys.map(pair)), { maxLength: 4 }) : fc.constant([] as string[]);
  const extra = fc.array(fc.oneof(fc.constantFrom('a=1', 'token=x', '%zz=%zz', '&&', '=', '__proto__[x]=1', 'a[b][c]=1', 'limit=1&limit=2'), fc.string({ maxLength: 10 }).map(sendable)), {
    maxLength: 2,
  });
  return fc.tuple(pairs, extra, fc.nat(4)).map(([p, x, none]) => (none === 0 ? '' : [...p, ...x].length ? `?${[...p, ...x].join('&')}` : ''));
}

/** Extra headers some routes read: ranges and validators (media), Last-Event-ID (stream), and noise. */
export const headerArb: fc.Arbitrary<Record<string, string>> = fc.dictionary(
  fc.constantFrom(
    'range',
    'if-none-match',
    'if-modified-since',
    'if-range',
    'if-match',
    'if-unmodified-since',
    'last-event-id',
    'accept',
    'accept-encoding',
    'x-forwarded-for',
    'origin',
    'authorization',
    'cookie',
  ),
  fc.oneof(
    fc.constantFrom(
      'bytes=0-10',
      'bytes=-5',
      'bytes=5-',
      'bytes=10-5',
      'bytes=0-0,2-3',
      'bytes=999999-',
      'bytes=x',
      '*',
      'W/"x"',
      '"x"',
      'Thu, 01 Jan 1970 00:00:00 GMT',
      'not a date',
      '12',
      '-1',
      '99999999999999999999',
      'Bearer x',
      'null',
      'gzip, br',
    ),
    fc.string({ maxLength: 30 }).map((s) => s.replace(/[^\u0020-\u007e]/g, '')),
  ),
  { maxKeys: 2 },
);

const METHODS = ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** Path-level oddities applied to the whole target now and then. */
const PATH_MUTATIONS: ((p: string) => string)[] = [
  (p) => p,
  (p) => `${p}/`,
  (p) => p.toUpperCase(),
  (p) => p.replace('/api/', '//api/'),
  (p) => p.replace('/api/', '/api/./'),
  (p) => p.replace('/api/', '/api/x/../'),
  (p) => p.replace('/api/', '/api/%2e%2e/api/'),
  (p) => `${p}/..`,
  (p) => `${p}/%2e%2e/%2e%2e`,
  (p) => `${p};jsessionid=x`,
  (p) => p.slice(1),
  (p) => `${p}%`,
];

/** One hostile request aimed at `route`. */
export function requestArb(route: RouteSpec, t: Targets): fc.Arbitrary<AimedReq> {
  const params = [...route.path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1] as string);
  const paramValues = fc.tuple(...params.map((p) => idArb(p, t).chain(placeArb)));
  return fc
    .record({
      values: params.length > 0 ? paramValues : fc.constant([] as string[]),
      query: queryArb(route, t),
      body: bodyArb(route, t),
      headers: headerArb,
      method: fc.oneof({ arbitrary: fc.constant(route.method.toUpperCase()), weight: 9 }, { arbitrary: fc.constantFrom(...METHODS), weight: 1 }),
      mutate: fc.oneof({ arbitrary: fc.constant(0), weight: 12 }, { arbitrary: fc.integer({ min: 1, max: PATH_MUTATIONS.length - 1 }), weight: 1 }),
    })
    .map(({ values, query, body, headers, method, mutate }) => {
      let i = 0;
      const p = route.path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, () => values[i++] as string);
      const path = (PATH_MUTATIONS[mutate] as (s: string) => string)(p) + query;
      const withBody = body.kind !== 'read';
      const req = {
        method,
        path,
        headers: { ...headers, ...(withBody ? body.headers : {}) },
        ...(withBody && body.body !== undefined ? { body: body.body } : {}),
        kind: withBody ? body.kind : 'read',
      } as AimedReq;
      // Kept out of fast-check's report of a counterexample: the request is shown as sent.
      Object.defineProperty(req, 'route', { value: route, enumerable: false });
      Object.defineProperty(req, fc.toStringMethod, { value: () => describeReq(req), enumerable: false });
      return req;
    });
}

/** One line (or a few) telling what a request was: method, target, how it was spoilt, headers and body. */
export function describeReq(r: AimedReq): string {
  const target = r.path.length > 300 ? `${r.path.slice(0, 300)}…(${r.path.length} chars)` : r.path;
  const body = r.body === undefined ? '-' : `${JSON.stringify(r.body.subarray(0, 300).toString('utf8'))}${r.body.length > 300 ? `…(${r.body.length} bytes)` : ''}`;
  return `${r.method} ${target} [${r.kind}, aimed at ${r.route.method.toUpperCase()} ${r.route.path}] headers=${JSON.stringify(r.headers)} body=${body}`;
}

/** A hostile request aimed at any of `routes`, every route equally likely. */
export function anyRequestArb(routes: readonly RouteSpec[], t: Targets): fc.Arbitrary<AimedReq> {
  return fc.oneof(...routes.map((r) => requestArb(r, t)));
}
