/**
 * The write proxy decides on the path the router will see, property-based:
 * fast-check writes every declared route in thousands of spellings (test/helpers/
 * path-spellings.ts) and sends each to a front whose SERVICE_WRITE_UPSTREAM is a recording
 * server. What must hold for every spelling:
 * - the front's router matches a route-preserving spelling to the route and parameters meant,
 *   and a spelling that changes the path to anything but them;
 * - it is forwarded if and only if that match is a forwardable mutation (never the internal
 *   bus, never a path that reaches no route), with exactly the route's canonical target;
 * - what is not forwarded is answered as a service without an upstream answers it (a second,
 *   plain service gets the same request);
 * - the upstream's internal bus accepts none of what the front forwards, and no spelling of the
 *   internal bus reaches a real upstream at all.
 */
import http from 'node:http';
import type net from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RouteSpec } from '../../src/http/route.js';
import { forwardedTarget, isForwardedMutation } from '../../src/http/write-proxy.js';
import { allEvents } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';
import { describeSpelling, spellingArb, type Spelling } from '../helpers/path-spellings.js';

const RUNS = 2500;

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

let recorder: http.Server;
let upstreamUrl: string;
const received: Received[] = [];
let front: TestService;
let plain: TestService;
let routes: readonly RouteSpec[];

beforeAll(async () => {
  recorder = http.createServer((req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(299, { 'content-type': 'application/json', 'x-recorded': '1' });
      res.end('{"recorded":true}');
    });
  });
  await new Promise<void>((resolve) => recorder.listen(0, '127.0.0.1', resolve));
  upstreamUrl = `http://127.0.0.1:${(recorder.address() as net.AddressInfo).port}`;
  // Nothing the front or the plain service runs locally starts a real program.
  const env = { DISPATCH_CLI: fixture('exit-3.mjs'), TTYD_BIN: fixture('ttyd-standin.mjs'), TTYD_COMMAND: '["true"]', CONSOLE_TTYD_PORTS: '1-1' };
  front = await startTestService({ env: { ...env, SERVICE_WRITE_UPSTREAM: upstreamUrl } });
  plain = await startTestService({ env });
  routes = front.service.api.routes;
});

afterAll(async () => {
  await front?.close();
  await plain?.close();
  recorder?.closeAllConnections();
  await new Promise((r) => recorder?.close(r));
});

/**
 * One request on a new connection; an event stream's body is not read (it never ends). An
 * answer the client cannot parse (Node's parser refusing the target answers a HEAD with a body)
 * is status 0 with its error code.
 */
function send(base: string, s: Pick<Spelling, 'method' | 'target'>, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; error?: string }> {
  const u = new URL(base);
  const hasBody = body !== undefined && s.method !== 'GET' && s.method !== 'HEAD';
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: u.hostname,
        port: u.port,
        method: s.method,
        path: s.target,
        agent: false,
        headers: hasBody ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) } : {},
      },
      (res) => {
        const done = () => resolve({ status: res.statusCode ?? 0, headers: res.headers });
        if (String(res.headers['content-type']).startsWith('text/event-stream') && s.method !== 'HEAD') {
          res.destroy();
          done();
        } else {
          res.resume();
          res.on('end', done);
          res.on('error', reject);
        }
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => (err.code?.startsWith('HPE_') ? resolve({ status: 0, headers: {}, error: err.code }) : reject(err)));
    req.end(hasBody ? body : undefined);
  });
}

describe('write proxy decisions over generated spellings of every route', () => {
  it(`forwards a spelling iff the router matches it to a forwardable mutation, in its canonical spelling (${RUNS} spellings)`, async () => {
    const figures = { spellings: 0, preserving: 0, forwarded: 0, localMatched: 0, unmatched: 0, routes: new Set<string>(), changes: new Map<string, number>(), statuses: new Map<number, number>() };
    const frontHost = new URL(front.url).host;
    await fc.assert(
      fc.asyncProperty(spellingArb(routes, front.service.port), async (s) => {
        const where = describeSpelling(s);
        const m = front.service.api.match({ method: s.method, url: s.target } as http.IncomingMessage);
        // 1. The match is the route meant, exactly when only route-preserving changes were made.
        const meant = m !== null && m.spec === s.route && JSON.stringify(m.params) === JSON.stringify(Object.fromEntries(Object.keys(m.params).map((k) => [k, s.params[k]])));
        expect({ where, meant }).toEqual({ where, meant: s.preserving });
        // 2. Forwarded iff a forwardable mutation, with its canonical target; never the internal bus.
        const before = received.length;
        const res = await send(front.url, s, '{}');
        const forwarded = received.slice(before);
        if (isForwardedMutation(m)) {
          expect(m?.spec.path, where).not.toBe('/api/internal/bus');
          expect(
            forwarded.map((r) => [r.method, r.url]),
            where,
          ).toEqual([[s.method, forwardedTarget(m!, s.target.replace(/^http:\/\/[^/]+/, ''))]]);
          expect(forwarded[0]?.url, where).not.toContain('//');
          // No dot-segment that a server on the way would remove (RFC 3986, 5.2.4).
          expect(
            forwarded[0]?.url
              .split('?')[0]
              ?.split('/')
              .filter((seg) => seg === '.' || seg === '..'),
            where,
          ).toEqual([]);
          expect(String(forwarded[0]?.headers.forwarded), where).toBe(`for=127.0.0.1;host="${frontHost}";proto=http`);
          expect(String(forwarded[0]?.headers['x-forwarded-for']), where).toBe('127.0.0.1');
          expect(res.status, where).toBe(299);
          figures.forwarded++;
        } else {
          // 3. Not forwarded: answered here, as a service without an upstream answers it.
          expect({ where, forwarded }).toEqual({ where, forwarded: [] });
          expect(res.headers['x-recorded'], where).toBeUndefined();
          const alone = await send(plain.url, s, '{}');
          expect({ where, status: res.status, error: res.error }).toEqual({ where, status: alone.status, error: alone.error });
          if (m === null) figures.unmatched++;
          else figures.localMatched++;
        }
        figures.spellings++;
        if (s.preserving) figures.preserving++;
        figures.routes.add(`${s.route.method} ${s.route.path}`);
        for (const c of s.changes) figures.changes.set(c, (figures.changes.get(c) ?? 0) + 1);
        figures.statuses.set(res.status, (figures.statuses.get(res.status) ?? 0) + 1);
      }),
      { numRuns: RUNS, endOnFailure: true },
    );
    console.log(
      `proxy-spellings: ${figures.spellings} spellings of ${figures.routes.size} routes (${figures.preserving} route-preserving): ${figures.forwarded} forwarded, ${figures.localMatched} served here as their route, ${figures.unmatched} matching no route (served here); changes ${JSON.stringify(Object.fromEntries(figures.changes))}; front statuses ${JSON.stringify(Object.fromEntries([...figures.statuses].sort((a, b) => a[0] - b[0])))}`,
    );
    expect(figures.routes.size).toBe(routes.length);
    expect(figures.forwarded).toBeGreaterThan(0);
    expect(figures.localMatched).toBeGreaterThan(0);
    expect(figures.unmatched).toBeGreaterThan(0);
  }, 300_000);
});

describe('the internal bus behind the write proxy', () => {
  it('is never reached on a real upstream by any spelling sent to the front, and refuses what the front forwards', async () => {
    const upstream = await startTestService();
    const env = { DISPATCH_CLI: fixture('exit-3.mjs') };
    const viaFront = await startTestService({ env: { ...env, SERVICE_WRITE_UPSTREAM: upstream.url } });
    try {
      const bus = routes.find((r) => r.path === '/api/internal/bus') as RouteSpec;
      const spellings = fc.sample(spellingArb([bus], viaFront.service.port), { numRuns: 300, seed: 10 });
      const statuses = new Map<number, number>();
      for (const s of spellings) {
        const res = await send(viaFront.url, s, JSON.stringify({ severity: 'info', scope: 'test/bus-spelling', summary: s.target }));
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
      const status = (await (await viaFront.get('/api/system-status')).json()) as { writeProxy: { forwarded: number } };
      expect(await allEvents(upstream.url, 'scopePrefix=test/bus-spelling')).toEqual([]);
      // Spellings with a method other than POST reach other routes (or none): none is the bus.
      const local = (await allEvents(viaFront.url, 'scopePrefix=test/bus-spelling')).length;
      console.log(
        `proxy-spellings: ${spellings.length} spellings of POST /api/internal/bus sent to a front: ${local} stored by the front itself, 0 on the upstream, ${status.writeProxy.forwarded} forwarded (other methods reaching mutations); statuses ${JSON.stringify(Object.fromEntries(statuses))}`,
      );
      expect(local).toBeGreaterThan(0);

      // And were one forwarded, the upstream would refuse it: the headers a front adds (those
      // of a mutation forwarded to the recording upstream).
      await send(front.url, { method: 'POST', target: '/api/proposals' }, '{}');
      const rec = received.at(-1) as Received;
      const headers = { via: String(rec.headers.via), forwarded: String(rec.headers.forwarded), 'x-forwarded-for': String(rec.headers['x-forwarded-for']) };
      for (const [name, value] of Object.entries(headers)) {
        const res = await fetch(`${upstream.url}/api/internal/bus`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', [name]: value },
          body: JSON.stringify({ severity: 'info', scope: 'test/bus-spelling', summary: name }),
        });
        expect({ name, status: res.status }).toEqual({ name, status: 403 });
      }
      expect(await allEvents(upstream.url, 'scopePrefix=test/bus-spelling')).toEqual([]);
    } finally {
      await viaFront.close();
      await upstream.close();
    }
  });
});
