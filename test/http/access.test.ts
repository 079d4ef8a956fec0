/**
 * Access, counted for docs/RELIABILITY.md: with CONSOLE_API_TOKEN set, every
 * protected route the service declares refuses a missing or wrong token (401) in many
 * spellings; the stream alone takes `?token=`; and CORS grants no origin outside the
 * allow-list, across thousands of generated look-alikes of the allowed ones. The per-route
 * behaviour is also tested in test/http/auth.test.ts, internal-bus.test.ts and
 * read-routes.test.ts; here the point is breadth, and the figures.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from '../../src/http/route.js';
import { startTestService, type TestService } from '../helpers/service.js';

const TOKEN = 'tok-Reliability.7_~';
const DEV_HOSTS = ['dev-a.mesh.internal', 'dev-b.mesh.internal'];
// The OpenAPI document rendered for people is open like the document.
const OPEN = ['GET /api/health', 'GET /api/ready', 'GET /api/config', 'GET /api/openapi.json', 'GET /api/docs'];
const HOSTS = ['localhost', '127.0.0.1', ...DEV_HOSTS];
const ALLOWED = HOSTS.flatMap((h) => [5173, 5174, 5175].map((p) => `http://${h}:${p}`));

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { CONSOLE_API_TOKEN: TOKEN, CONSOLE_CORS_DEV_HOSTS: DEV_HOSTS.join(',') } });
});
afterAll(async () => {
  await t?.close();
});

const key = (r: Pick<RouteSpec, 'method' | 'path'>) => `${r.method.toUpperCase()} ${r.path}`;
const concrete = (p: string) => p.replace(/[:*][A-Za-z_$][\w$]*/g, 'x1');

/** Sends one request; reads the status and headers, drops the body (a stream never ends). */
async function send(method: string, urlPath: string, headers: Record<string, string>): Promise<Response> {
  const res = await fetch(`${t.url}${urlPath}`, {
    method,
    headers: method === 'GET' ? headers : { 'content-type': 'application/json', ...headers },
    ...(method === 'GET' ? {} : { body: '{}' }),
  });
  await res.body?.cancel();
  return res;
}

describe('access with CONSOLE_API_TOKEN set', () => {
  it('refuses every protected route without a token or with any wrong one (401), and lets the right one through', async () => {
    const routes = t.service.api.routes.filter((r) => !OPEN.includes(key(r)));
    const wrong: Record<string, string>[] = [
      {},
      { authorization: '' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' },
      { authorization: `Bearer ${TOKEN}x` },
      { authorization: `Bearer ${TOKEN.slice(0, -1)}` },
      { authorization: `Bearer ${TOKEN.toUpperCase()}` },
      { authorization: `Bearer  ${TOKEN} x` },
      { authorization: `Basic ${TOKEN}` },
      { authorization: `Token ${TOKEN}` },
      { authorization: TOKEN },
      { 'x-api-token': TOKEN },
      { cookie: `token=${TOKEN}` },
    ];
    let refused = 0;
    let accepted = 0;
    for (const r of routes) {
      const method = r.method.toUpperCase();
      for (const headers of wrong) {
        const res = await send(method, concrete(r.path), headers);
        expect({ route: key(r), headers, status: res.status }).toEqual({ route: key(r), headers, status: 401 });
        refused++;
      }
      // The query parameter is a credential for the stream only.
      const viaQuery = await send(method, `${concrete(r.path)}?token=${encodeURIComponent(TOKEN)}`, {});
      const streamRoute = key(r) === 'GET /api/events/stream';
      expect({ route: key(r), status: viaQuery.status === 401 }).toEqual({ route: key(r), status: !streamRoute });
      if (streamRoute) accepted++;
      else refused++;
      const right = await send(method, concrete(r.path), { authorization: `Bearer ${TOKEN}` });
      expect({ route: key(r), status: right.status }).not.toEqual({ route: key(r), status: 401 });
      accepted++;
    }
    console.log(`access: ${routes.length} protected routes, ${refused} requests without the right token all refused with 401, ${accepted} with it let through`);
  });
});

describe('CORS allow-list', () => {
  /** The Access-Control-Allow-Origin a simple request and a preflight get for `origin`. */
  async function granted(origin: string): Promise<[string | null, string | null]> {
    const simple = await fetch(`${t.url}/api/health`, { headers: { origin } });
    await simple.body?.cancel();
    const pre = await fetch(`${t.url}/api/proposals/generate`, {
      method: 'OPTIONS',
      headers: { origin, 'access-control-request-method': 'POST' },
    });
    await pre.body?.cancel();
    return [simple.headers.get('access-control-allow-origin'), pre.headers.get('access-control-allow-origin')];
  }

  it('grants each of the allowed origins, without credentials', async () => {
    for (const origin of ALLOWED) expect(await granted(origin)).toEqual([origin, origin]);
    const res = await fetch(`${t.url}/api/health`, { headers: { origin: ALLOWED[0] as string } });
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('grants no look-alike: named ones and thousands generated from the allowed origins', async () => {
    const named = [
      'http://localhost:51730',
      'http://localhost.evil:5173',
      'https://localhost:5173',
      'http://localhost:5172',
      'http://localhost:5176',
      'http://localhost',
      'http://127.0.0.2:5173',
      'http://0.0.0.0:5173',
      'http://[::1]:5173',
      'http://evil.localhost:5173',
      'http://localhost:5173.evil.example',
      'http://user@localhost:5173',
      'http://localhost:5173/',
      'http://localhost.:5173',
      'HTTP://LOCALHOST:5173',
      'http://dev-a.mesh.internal.evil:5173',
      'http://xdev-a.mesh.internal:5173',
      'null',
      '',
    ];
    // Mutants of an allowed origin: a prefix or suffix on the scheme, host or port, another
    // scheme, or a character changed. Whatever is not exactly on the list must get nothing.
    const mutant = fc
      .record({
        base: fc.constantFrom(...ALLOWED),
        kind: fc.constantFrom('host-suffix', 'host-prefix', 'port-suffix', 'port-prefix', 'scheme', 'path', 'char'),
        extra: fc.stringMatching(/^[a-z0-9.-]{1,6}$/),
        at: fc.nat(),
      })
      .map(({ base, kind, extra, at }) => {
        const u = /^http:\/\/(.+):(\d+)$/.exec(base) as RegExpExecArray;
        const [host, port] = [u[1] as string, u[2] as string];
        switch (kind) {
          case 'host-suffix':
            return `http://${host}${extra}:${port}`;
          case 'host-prefix':
            return `http://${extra}${host}:${port}`;
          case 'port-suffix':
            return `http://${host}:${port}${extra.replace(/\D/g, '') || '0'}`;
          case 'port-prefix':
            return `http://${host}:${extra.replace(/\D/g, '') || '1'}${port}`;
          case 'scheme':
            return `${['https', 'ws', 'wss', 'file', 'httpx'][at % 5]}://${host}:${port}`;
          case 'path':
            return `${base}/${extra}`;
          default: {
            const i = at % base.length;
            const c = base[i] === 'x' ? 'y' : 'x';
            return base.slice(0, i) + c + base.slice(i + 1);
          }
        }
      })
      .filter((o) => !ALLOWED.includes(o));
    const generated = fc.sample(mutant, { numRuns: 4000, seed: 6 });
    const tried = [...new Set([...named, ...generated])];
    for (const origin of tried) expect({ origin, granted: await granted(origin) }).toEqual({ origin, granted: [null, null] });
    console.log(
      `access: CORS granted ${ALLOWED.length} allowed origins and refused all ${tried.length} look-alikes (${named.length} named, the rest generated), each by a simple request and a preflight`,
    );
  });
});
