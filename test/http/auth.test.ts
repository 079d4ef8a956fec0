/**
 * The optional bearer token CONSOLE_API_TOKEN (api-decisions.md, "Network and safety
 * defaults"). The protected routes are not listed here: the tests walk every
 * route the service declares (`api.routes`), so a route added later is covered too.
 */
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopbackHost, isOpenRoute } from '../../src/http/auth.js';
import type { RouteSpec } from '../../src/http/route.js';
import { readConfig } from '../../src/config/config.js';
import { rawRequest } from '../helpers/raw.js';
import { startTestService, type TestService } from '../helpers/service.js';

const TOKEN = 'tok-3f9a.Zq_~+/x=';
// The OpenAPI document rendered for people is open like the document.
const OPEN = ['GET /api/health', 'GET /api/ready', 'GET /api/config', 'GET /api/openapi.json', 'GET /api/docs'];

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
});

async function start(env: Record<string, string> = {}, logger?: pino.Logger): Promise<TestService> {
  const t = await startTestService({ env, ...(logger ? { logger } : {}) });
  services.push(t);
  return t;
}

/** A concrete URL path for a route template: every parameter becomes a valid identifier. */
const concrete = (path: string) => path.replace(/[:*][A-Za-z_$][\w$]*/g, 'x1');

/**
 * Sends one request and reads only its status and headers: the body (an endless event
 * stream for some routes) is dropped.
 */
async function hit(t: TestService, route: Pick<RouteSpec, 'method' | 'path'>, headers: Record<string, string> = {}, query = '') {
  const res = await fetch(`${t.url}${concrete(route.path)}${query}`, {
    method: route.method.toUpperCase(),
    headers: route.method === 'get' ? headers : { 'content-type': 'application/json', ...headers },
    // An empty object: never a valid body for a route that acts, so nothing is started.
    ...(route.method === 'get' ? {} : { body: '{}' }),
  });
  await res.body?.cancel();
  return res;
}

const key = (r: Pick<RouteSpec, 'method' | 'path'>) => `${r.method.toUpperCase()} ${r.path}`;

describe('with CONSOLE_API_TOKEN set', () => {
  it('refuses every protected route without a token and with a wrong one: 401, WWW-Authenticate, a detail', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    const routes = t.service.api.routes.filter((r) => !OPEN.includes(key(r)));
    // The walk covers the routes of this issue at least (a sanity check on the walk itself).
    expect(routes.map(key)).toEqual(expect.arrayContaining(['GET /api/metrics', 'GET /api/system-status', 'GET /api/events/stream', 'POST /api/proposals/generate']));
    for (const r of routes) {
      const variants: Record<string, string>[] = [{}, { authorization: `Bearer ${TOKEN}x` }, { authorization: 'Bearer' }, { authorization: `Basic ${TOKEN}` }];
      for (const headers of variants) {
        const res = await fetch(`${t.url}${concrete(r.path)}`, {
          method: r.method.toUpperCase(),
          headers: r.method === 'get' ? headers : { 'content-type': 'application/json', ...headers },
          ...(r.method === 'get' ? {} : { body: '{}' }),
        });
        expect({ route: key(r), headers, status: res.status }).toEqual({ route: key(r), headers, status: 401 });
        expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="console-backend"/);
        expect(((await res.json()) as { detail: string }).detail).toMatch(/token/);
      }
    }
  });

  it('accepts the right token on every route', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    for (const r of t.service.api.routes) {
      const res = await hit(t, r, { authorization: `Bearer ${TOKEN}` });
      expect({ route: key(r), status: res.status }).not.toEqual({ route: key(r), status: 401 });
    }
    const ok = await t.get('/api/system-status', { headers: { authorization: `bearer   ${TOKEN}` } });
    expect(ok.status).toBe(200);
  });

  it('serves health, config and the OpenAPI document without a token', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    for (const r of t.service.api.routes.filter((x) => OPEN.includes(key(x)))) {
      const res = await hit(t, r);
      expect({ route: key(r), status: res.status }).toEqual({ route: key(r), status: 200 });
    }
    expect(
      t.service.api.routes
        .filter((x) => OPEN.includes(key(x)))
        .map(key)
        .sort(),
    ).toEqual([...OPEN].sort());
    // …spelled any way Express routes them, and with a wrong token too (it is not checked there).
    expect((await rawRequest(t.url, '/API/Health/')).status).toBe(200);
    expect((await t.get('/api/health', { headers: { authorization: 'Bearer nope' } })).status).toBe(200);
  });

  it('accepts ?token= on the event stream only', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    const stream = await t.get(`/api/events/stream?token=${encodeURIComponent(TOKEN)}`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    await stream.body?.cancel();
    expect((await t.get('/api/events/stream?token=wrong')).status).toBe(401);
    expect((await t.get('/api/events/stream')).status).toBe(401);
    // Elsewhere the query parameter is not a credential.
    expect((await t.get(`/api/system-status?token=${encodeURIComponent(TOKEN)}`)).status).toBe(401);
    expect((await t.get(`/api/events?token=${encodeURIComponent(TOKEN)}`)).status).toBe(401);
  });

  it('judges each request as the route the router matches it to: every spelling of a route gets that route’s answer', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    // Open routes in any spelling the router serves.
    for (const p of ['/api/heal%74h', '/%61pi/config', '/API/OPENAPI.JSON/', '/api/health?token=nope']) {
      const res = await rawRequest(t.url, p);
      expect({ p, status: res.status }).toEqual({ p, status: 200 });
    }
    // The query token on the stream in any spelling, for GET and HEAD; nowhere else.
    const q = `token=${encodeURIComponent(TOKEN)}`;
    for (const p of [`/api/events/stream?${q}`, `/api/events/strea%6D?${q}`, `/API/Events/Stream/?${q}`, `/api/events/stream?%74oken=${encodeURIComponent(TOKEN)}`]) {
      for (const method of ['GET', 'HEAD']) {
        const res = await fetch(`${t.url}${p}`, { method });
        await res.body?.cancel();
        expect({ p, method, status: res.status }).toEqual({ p, method, status: 200 });
      }
    }
    for (const p of [`/api/event%73?${q}`, `/api/events/stream/x?${q}`, `/api//events/stream?${q}`]) {
      expect({ p, status: (await rawRequest(t.url, p)).status }).toEqual({ p, status: 401 });
    }
    // Paths that reach no route need the token too (401 before 404), however they are spelled.
    for (const p of ['/api//health', '/api/./health', '/api/health/x', '/api/heal%74h%2F']) {
      expect({ p, status: (await rawRequest(t.url, p)).status }).toEqual({ p, status: 401 });
    }
  });

  it('compares tokens of every length through a fixed-size digest: a wrong one is a 401, never an error (constant time)', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    // timingSafeEqual on the raw strings would throw (a 500) on every length but the token's own.
    const lengths = [...Array.from({ length: 2 * TOKEN.length + 2 }, (_, i) => i), 255, 256, 4096];
    for (const n of lengths) {
      // The token's own characters, cut or repeated to n; at its own length, its last one changed.
      const candidate = n === TOKEN.length ? `${TOKEN.slice(0, -1)}#` : TOKEN.repeat(Math.ceil((n + 1) / TOKEN.length)).slice(0, n);
      const res = await t.get('/api/system-status', { headers: { authorization: `Bearer ${candidate}` } });
      expect({ n, status: res.status }).toEqual({ n, status: 401 });
      const viaQuery = await t.get(`/api/events/stream?token=${encodeURIComponent(candidate)}`);
      await viaQuery.body?.cancel();
      expect({ n, status: viaQuery.status }).toEqual({ n, status: 401 });
    }
    expect((await t.get('/api/system-status', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(200);
  });

  it('lets CORS preflights through without a token', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    const res = await fetch(`${t.url}/api/proposals/generate`, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization,content-type' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    // The 401 itself carries the CORS headers, so the browser lets the console read it.
    const denied = await t.get('/api/system-status', { headers: { origin: 'http://localhost:5173' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
  });

  it('refuses unknown paths without a token (401 before 404: no route discovery)', async () => {
    const t = await start({ CONSOLE_API_TOKEN: TOKEN });
    expect((await t.get('/api/nope')).status).toBe(401);
    expect((await t.get('/api/nope', { headers: { authorization: `Bearer ${TOKEN}` } })).status).toBe(404);
  });
});

describe('without CONSOLE_API_TOKEN', () => {
  it('leaves every route open', async () => {
    const t = await start();
    for (const r of t.service.api.routes) {
      const res = await hit(t, r);
      expect({ route: key(r), status: res.status }).not.toEqual({ route: key(r), status: 401 });
    }
  });

  it('treats a blank CONSOLE_API_TOKEN as unset, and refuses one that cannot travel in a header', async () => {
    const t = await start({ CONSOLE_API_TOKEN: '  ' });
    expect((await t.get('/api/system-status')).status).toBe(200);
    expect(() => readConfig({ CONSOLE_API_TOKEN: 'has space' })).toThrow(/CONSOLE_API_TOKEN/);
    expect(readConfig({ CONSOLE_API_TOKEN: ` ${TOKEN} ` }).apiToken).toBe(TOKEN);
  });
});

describe('start-up warning', () => {
  /** A pino logger writing into an array, for the service's own start-up lines. */
  function capture(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        for (const l of chunk.toString('utf8').split('\n')) if (l.trim()) lines.push(JSON.parse(l) as Record<string, unknown>);
        cb();
      },
    });
    return { logger: pino({ level: 'info' }, sink), lines };
  }
  const warned = (lines: Record<string, unknown>[]) => lines.some((l) => l.level === 40 && String(l.msg).includes('CONSOLE_API_TOKEN'));

  it('warns when the service listens beyond loopback without a token', async () => {
    const { logger, lines } = capture();
    const t = await start({ HOST: '0.0.0.0' }, logger);
    expect(warned(lines)).toBe(true);
    expect((await fetch(`http://127.0.0.1:${t.service.port}/api/health`)).status).toBe(200);
  });

  it('does not warn on loopback, nor beyond it with a token', async () => {
    const a = capture();
    await start({}, a.logger);
    expect(warned(a.lines)).toBe(false);
    const b = capture();
    await start({ HOST: '0.0.0.0', CONSOLE_API_TOKEN: TOKEN }, b.logger);
    expect(warned(b.lines)).toBe(false);
  });

  it('knows the loopback addresses', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', '::1', '[::1]', 'localhost', 'LOCALHOST', '::ffff:127.0.0.1']) expect({ h, loop: isLoopbackHost(h) }).toEqual({ h, loop: true });
    for (const h of ['0.0.0.0', '::', '10.0.0.5', '192.168.1.2', 'example.org', '128.0.0.1']) expect({ h, loop: isLoopbackHost(h) }).toEqual({ h, loop: false });
  });

  it('names the open routes for GET and HEAD only', () => {
    expect(isOpenRoute('GET', '/api/health')).toBe(true);
    expect(isOpenRoute('HEAD', '/api/config')).toBe(true);
    expect(isOpenRoute('POST', '/api/health')).toBe(false);
    expect(isOpenRoute('GET', '/api/metrics')).toBe(false);
  });
});
