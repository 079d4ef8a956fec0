/**
 * The write proxy (service-spec.md §Cross-cutting behaviour), with two real
 * instances of the service: an upstream and a front started with SERVICE_WRITE_UPSTREAM set
 * to the upstream's URL.
 */
import http from 'node:http';
import type net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';
import { freePort } from '../helpers/process.js';

const PROJECT = 'harbor-lights';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
});

async function start(env: Record<string, string> = {}): Promise<TestService> {
  const t = await startTestService({ env: { DISPATCH_CLI: fixture('echo-argv.mjs'), ...env } });
  services.push(t);
  return t;
}

/** An upstream and a front that forwards its mutations to it. */
async function pair(upstreamEnv: Record<string, string> = {}, frontEnv: Record<string, string> = {}) {
  const upstream = await start(upstreamEnv);
  const front = await start({ SERVICE_WRITE_UPSTREAM: upstream.url, ...frontEnv });
  return { upstream, front };
}

/** A service whose SERVICE_WRITE_UPSTREAM is its own URL (a port probed free first; retried if taken meanwhile). */
async function startOnOwnPort(): Promise<TestService> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      return await start({ PORT: String(port), SERVICE_WRITE_UPSTREAM: `http://127.0.0.1:${port}` });
    } catch (err) {
      if (attempt >= 3 || (err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
}

const jobIds = async (t: TestService) => ((await (await t.get('/api/jobs')).json()) as { proposalId: string }[]).map((j) => j.proposalId);

const proxyStatus = async (t: TestService) => ((await (await t.get('/api/system-status')).json()) as { writeProxy: Record<string, unknown> }).writeProxy;

describe('write proxy', () => {
  it('starts a generation job on the upstream, not on the front', async () => {
    const { upstream, front } = await pair();
    const res = await front.post('/api/proposals/generate', { project: PROJECT });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };

    expect(await jobIds(upstream)).toContain(proposalId);
    expect(await jobIds(front)).not.toContain(proposalId);
    // Reads stay local: the front's own job and event views know nothing of it.
    expect((await front.get(`/api/jobs/${proposalId}`)).status).toBe(404);
    const upstreamEvents = await waitFor(async () => {
      const evs = (await allEvents(upstream.url, 'scopePrefix=engine/generation')).filter((e) => e.payload.proposal_id === proposalId);
      return evs.some((e) => e.summary.startsWith('dispatch_cli exited')) ? evs : undefined;
    }, 'the job to exit on the upstream');
    expect(upstreamEvents.length).toBeGreaterThan(0);
    expect((await allEvents(front.url, 'scopePrefix=engine/generation')).filter((e) => e.payload.proposal_id === proposalId)).toEqual([]);
  });

  it('forwards the body as sent: snake_case members arrive intact', async () => {
    const { upstream, front } = await pair();
    const res = await front.post('/api/proposals/generate', { project: PROJECT, shot_id: 'sh-7', dry_run: true, model: 'm/1' });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    const job = (await (await upstream.get(`/api/jobs/${proposalId}`)).json()) as { argv: string[] };
    expect(job.argv.slice(2)).toEqual(['--project', PROJECT, '--shot', 'sh-7', '--model', 'm/1', '--dry-run']);
  });

  it('answers with the upstream’s answer as is: a 422 and its detail', async () => {
    const { upstream, front } = await pair();
    const viaFront = await front.post('/api/proposals/generate', { project: '../etc', dry_run: 'yes' });
    const direct = await upstream.post('/api/proposals/generate', { project: '../etc', dry_run: 'yes' });
    expect(viaFront.status).toBe(422);
    expect(viaFront.headers.get('content-type')).toBe(direct.headers.get('content-type'));
    expect(await viaFront.json()).toEqual(await direct.json());
  });

  it('forwards what the front would refuse locally: the upstream is the authority for mutations', async () => {
    // An upstream with a larger body bound accepts what the front's own bound (1 KiB) refuses.
    const { front } = await pair({}, { CONSOLE_MAX_BODY_BYTES: '1024' });
    const res = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true, padding: 'x'.repeat(4096) });
    expect(res.status).toBe(202);
    // A non-JSON body is the upstream's 422, not a local one: forwarded, the upstream's detail.
    const text = await rawRequest(front.url, '/api/proposals/generate', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'hello' });
    expect(text.status).toBe(422);
    expect((await proxyStatus(front)).forwarded).toBe(2);
  });

  it('streams a text/event-stream answer through', async () => {
    const { front } = await pair();
    const res = await front.post('/api/chat', { message: 'hello there' });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const body = await res.text();
    expect(body).toContain('data: {"delta":');
    expect(body.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('keeps reads local, with their local answers', async () => {
    const { upstream, front } = await pair();
    await upstream.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(await jobIds(front)).toEqual([]);
    expect((await front.get('/api/health')).status).toBe(200);
    expect((await proxyStatus(front)).forwarded).toBe(0);
  });

  it('passes Authorization through for the upstream to check its own token', async () => {
    const { front } = await pair({ CONSOLE_API_TOKEN: 'upstream-secret' });
    const none = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Bearer/);
    const ok = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true }, { headers: { 'content-type': 'application/json', authorization: 'Bearer upstream-secret' } });
    expect(ok.status).toBe(202);
  });

  it('checks the front’s own token before forwarding', async () => {
    const { upstream, front } = await pair({ CONSOLE_API_TOKEN: 'shared-secret' }, { CONSOLE_API_TOKEN: 'shared-secret' });
    const none = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(none.status).toBe(401);
    const headers = { 'content-type': 'application/json', authorization: 'Bearer shared-secret' };
    // Refused by the front itself: nothing was forwarded.
    const status = ((await (await front.get('/api/system-status', { headers })).json()) as { writeProxy: { forwarded: number } }).writeProxy;
    expect(status.forwarded).toBe(0);
    const ok = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true }, { headers });
    expect(ok.status).toBe(202);
    const { proposalId } = (await ok.json()) as { proposalId: string };
    expect((await upstream.get(`/api/jobs/${proposalId}`, { headers })).status).toBe(200);
  });

  it('runs POST /api/internal/bus locally', async () => {
    const { upstream, front } = await pair();
    const res = await front.post('/api/internal/bus', { severity: 'info', scope: 'test/proxy', summary: 'local' });
    expect(res.status).toBe(202);
    expect((await allEvents(front.url, 'scopePrefix=test/proxy')).map((e) => e.summary)).toEqual(['local']);
    expect(await allEvents(upstream.url, 'scopePrefix=test/proxy')).toEqual([]);
    // Other spellings Express routes to the same handler are not forwarded either.
    const upper = await front.post('/API/Internal/Bus/', { severity: 'info', scope: 'test/proxy', summary: 'upper' });
    expect(upper.status).toBe(202);
    expect((await proxyStatus(front)).forwarded).toBe(0);
  });

  it('answers 502 with a detail when the upstream is down, and reports it in the system status', async () => {
    const { upstream, front } = await pair();
    await upstream.stop();
    const res = await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(res.status).toBe(502);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toMatch(new RegExp(`^write upstream ${upstream.url.replace(/[.]/g, '\\.')} unreachable: .*ECONNREFUSED`));
    // Reads still work on the front.
    expect((await front.get('/api/jobs')).status).toBe(200);
    expect(await proxyStatus(front)).toMatchObject({
      enabled: true,
      upstream: upstream.url,
      forwarded: 1,
      answered: 0,
      failures: 1,
      lastFailure: { detail, at: expect.any(String) },
    });
  });

  it('reports the proxy in the system status', async () => {
    const { upstream, front } = await pair();
    expect(await proxyStatus(upstream)).toEqual({ enabled: false, upstream: null, forwarded: 0, answered: 0, failures: 0, lastFailure: null });
    await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    await front.post('/api/proposals/generate', { project: 'no such project!' });
    expect(await proxyStatus(front)).toEqual({ enabled: true, upstream: upstream.url, forwarded: 2, answered: 2, failures: 0, lastFailure: null });
  });

  /**
   * Failure modes a real instance cannot be made to show on demand (an answer cut midway, an
   * endless streamed answer) use a stand-in upstream: a plain HTTP server on loopback.
   */
  async function standIn(handler: http.RequestListener): Promise<{ url: string; close: () => Promise<void> }> {
    const server = http.createServer(handler);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
    const close = () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
    return { url, close };
  }

  it('cuts the answer when the upstream cuts it: a truncated body never looks complete', async () => {
    const up = await standIn((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: {"delta":"first "}\n\n', () => setTimeout(() => res.socket?.destroy(), 50));
    });
    try {
      const front = await start({ SERVICE_WRITE_UPSTREAM: up.url });
      // node:http reports a chunked body that ends without its last chunk as an error (fetch
      // hands the truncated text over as if complete).
      const cut = rawRequest(front.url, '/api/chat', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"message":"hi"}' });
      await expect(cut).rejects.toThrow(/aborted/);
      expect(await proxyStatus(front)).toMatchObject({ forwarded: 1, answered: 1, failures: 1, lastFailure: { detail: expect.stringMatching(/cut its answer/) } });
    } finally {
      await up.close();
    }
  });

  it('stops the upstream request when the client stops reading a streamed answer', async () => {
    let upstreamClosed: () => void = () => {};
    const closed = new Promise<void>((resolve) => (upstreamClosed = resolve));
    const up = await standIn((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const tick = setInterval(() => res.write('data: {"delta":"more "}\n\n'), 20);
      res.on('close', () => {
        clearInterval(tick);
        upstreamClosed();
      });
    });
    try {
      const front = await start({ SERVICE_WRITE_UPSTREAM: up.url });
      const controller = new AbortController();
      const res = await front.post('/api/chat', { message: 'hi' }, { signal: controller.signal });
      const reader = res.body!.getReader();
      await reader.read();
      controller.abort();
      await closed; // with a ceiling: the test time-out
      expect(await proxyStatus(front)).toMatchObject({ forwarded: 1, answered: 1, failures: 0 });
    } finally {
      await up.close();
    }
  });

  it('refuses a loop: a service whose upstream is itself answers 508 instead of forwarding forever', async () => {
    const self = await startOnOwnPort();
    const res = await self.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(res.status).toBe(508);
    expect(((await res.json()) as { detail: string }).detail).toMatch(/^write proxy loop/);
    expect(await jobIds(self)).toEqual([]);
  });
});

/** What a recording stand-in upstream received. */
interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  peer: string | undefined;
}

/** A plain HTTP server that records every request and answers 200 `{ "recorded": true }` with `x-recorded: 1`. */
async function recorder(): Promise<{ url: string; received: Received[]; close: () => Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, peer: req.socket.remoteAddress });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json', 'x-recorded': '1' });
      res.end('{"recorded":true}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`;
  return {
    url,
    received,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const EVENT = (summary: string) => JSON.stringify({ severity: 'info', scope: 'test/spelling', summary });
const JSON_HEADERS = { 'content-type': 'application/json' };

describe('write proxy: every spelling of a route has that route’s fate', () => {
  it('serves every spelling of POST /api/internal/bus as the front alone would: never forwarded, never run on the upstream', async () => {
    const { upstream, front } = await pair();
    // Spellings the router takes for the internal bus: run here, from the caller's own address.
    const local = ['/api/internal/bus', '/API/Internal/Bus/', '/api/intern%61l/bus', '/api/internal/bu%73', '/%61pi/internal/bus', '/api/%69nternal/bus?x=1'];
    for (const p of local) {
      const res = await rawRequest(front.url, p, { method: 'POST', headers: JSON_HEADERS, body: EVENT(p) });
      expect({ p, status: res.status }).toEqual({ p, status: 202 });
    }
    // Spellings the router takes for no route: the front's own 404 (http-proxy used to collapse
    // the doubled slash on the way, and the upstream took the request as its own machine's).
    const none = [
      '/api//internal/bus',
      '//api/internal/bus',
      '/api/internal//bus',
      '/api/internal/bus//',
      '/api/./internal/bus',
      '/api/x/../internal/bus',
      '/api/internal%2Fbus',
      '/api%2Finternal%2Fbus',
      '/api/internal/bus;x',
      '/api\\internal\\bus',
    ];
    for (const p of none) {
      const res = await rawRequest(front.url, p, { method: 'POST', headers: JSON_HEADERS, body: EVENT(p) });
      expect({ p, status: res.status, detail: res.json().detail }).toEqual({ p, status: 404, detail: expect.stringMatching(/^no route for POST /) });
    }
    expect((await allEvents(front.url, 'scopePrefix=test/spelling')).map((e) => e.summary)).toEqual(local);
    expect(await allEvents(upstream.url, 'scopePrefix=test/spelling')).toEqual([]);
    expect((await proxyStatus(front)).forwarded).toBe(0);
  });

  it('runs every spelling of a console write on the upstream, and a path that reaches no route nowhere but here', async () => {
    const { upstream, front } = await pair();
    const spellings = ['/api/proposals', '/%61pi/proposals', '/api/proposal%73', '/API/PROPOSALS/', '/Api/Proposals?x=1'];
    for (const p of spellings) {
      const res = await rawRequest(front.url, p, { method: 'POST', headers: JSON_HEADERS, body: JSON.stringify({ title: p }) });
      expect({ p, status: res.status }).toEqual({ p, status: 201 });
    }
    const titles = async (t: TestService) => ((await (await t.get('/api/proposals')).json()) as { title: string }[]).map((x) => x.title).sort();
    expect(await titles(upstream)).toEqual([...spellings].sort());
    expect(await titles(front)).toEqual([]);
    // No declared route: answered here (404, or 405 for a known path with another method),
    // not sent on, whatever the method.
    for (const [method, p, status] of [
      ['POST', '/api//proposals', 404],
      ['POST', '/api/proposals/x/../', 404],
      ['DELETE', '/api/projects', 405],
      ['PATCH', '/api/proposals', 405],
      ['PUT', '/api/nope', 404],
    ] as const) {
      const res = await rawRequest(front.url, p, { method, headers: JSON_HEADERS, body: '{}' });
      expect({ method, p, status: res.status }).toEqual({ method, p, status });
    }
    expect((await proxyStatus(front)).forwarded).toBe(spellings.length);
  });

  it('sends the upstream the route it decided on, in one spelling, with the client’s address in Forwarded and X-Forwarded-For', async () => {
    const up = await recorder();
    try {
      const front = await start({ SERVICE_WRITE_UPSTREAM: up.url });
      const host = new URL(front.url).host;
      const cases: [string, string, string][] = [
        ['POST', '/%61pi/Proposals/?b=2&a=%2F', '/api/proposals?b=2&a=%2F'],
        ['POST', '/api/takes/tk%5F0001/ACTION', '/api/takes/tk_0001/action'],
        ['POST', '/api/takes/a%2Fb/action', '/api/takes/a%2Fb/action'],
        ['PUT', '/api/workspace-state/w%20x/', '/api/workspace-state/w%20x'],
        ['POST', '/api/memory/%C3%A9/toggle', '/api/memory/%C3%A9/toggle'],
        // A parameter of dots only travels encoded: no dot-segment for a server on the way to remove.
        ['POST', '/api/takes/%2e%2e/action', '/api/takes/%2E%2E/action'],
        ['POST', '/api/jobs/./cancel', '/api/jobs/%2E/cancel'],
        ['PUT', '/api/workspace-state/..', '/api/workspace-state/%2E%2E'],
      ];
      for (const [method, sent, expected] of cases) {
        const res = await rawRequest(front.url, sent, { method, headers: { ...JSON_HEADERS, 'x-forwarded-for': '203.0.113.9' }, body: '{}' });
        expect(res.headers['x-recorded']).toBe('1');
        const got = up.received.at(-1) as Received;
        expect({ sent, method: got.method, url: got.url }).toEqual({ sent, method, url: expected });
        // Appended after what the client claimed, so the last element is the address the front saw.
        expect(got.headers['x-forwarded-for']).toBe('203.0.113.9,127.0.0.1');
        expect(got.headers.forwarded).toBe(`for=127.0.0.1;host="${host}";proto=http`);
        expect(got.headers.via).toMatch(/^1\.1 console-backend-[0-9a-f]{8}$/);
      }
      expect(up.received).toHaveLength(cases.length);
    } finally {
      await up.close();
    }
  });
});
