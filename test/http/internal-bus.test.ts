/**
 * `POST /api/internal/bus` through the real server: loopback callers only, judged by the
 * socket's remote address; a validated event without id/ts; 202 with the stored id. The caller
 * from elsewhere is a network namespace of the test's own (test/helpers/netns.ts): no traffic
 * goes to this machine's own interface addresses.
 */
import http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { isLoopback } from '../../src/http/routes/internal-bus.js';
import { allEvents } from '../helpers/events.js';
import { makeNetns, type Netns } from '../helpers/netns.js';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/**
 * The POST of {@link postFrom}, made by a node inside the namespace `ns` (its address is the
 * source the server sees).
 */
async function postFromNamespace(ns: Netns, host: string, port: number, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const script = `
    const http = require('node:http');
    const [host, port, data, headers] = process.argv.slice(1);
    const req = http.request({ host, port: Number(port), path: '/api/internal/bus', method: 'POST', agent: false,
      headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...JSON.parse(headers) } }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => (text += c)).on('end', () => process.stdout.write(JSON.stringify({ status: res.statusCode, text })));
    });
    req.on('error', (err) => { process.stderr.write(String(err)); process.exit(1); });
    req.end(data);`;
  const out = JSON.parse(await ns.run([process.execPath, '-e', script, host, String(port), JSON.stringify(body), JSON.stringify(headers)])) as { status: number; text: string };
  return { status: out.status, json: JSON.parse(out.text) };
}

/** POST with node:http from a chosen local address (the source address the server sees). */
function postFrom(host: string, port: number, localAddress: string, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: any }> {
  const data = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host,
        port,
        localAddress,
        path: '/api/internal/bus',
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(data)), ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

const EVENT = { severity: 'warning', scope: 'engine/render', summary: 'render slow', detail: 'frame 12 took 9 s', payload: { frame: 12 } };

describe('isLoopback', () => {
  it('accepts 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104 only', () => {
    for (const a of ['127.0.0.1', '127.255.1.2', '::1', '::ffff:127.0.0.1', '::ffff:127.9.8.7']) expect(isLoopback(a), a).toBe(true);
    for (const a of ['10.0.0.1', '128.0.0.1', '0.0.0.0', '::', '::2', '::ffff:10.0.0.1', '::ffff:128.0.0.1', 'fe80::1', 'localhost', '', undefined]) {
      expect(isLoopback(a), String(a)).toBe(false);
    }
  });
});

describe('POST /api/internal/bus', () => {
  it('stores an event from a loopback caller and answers 202 with its id', async () => {
    t = await startTestService();
    const res = await t.post('/api/internal/bus', EVENT);
    expect(res.status).toBe(202);
    const { id } = (await res.json()) as { id: string };
    expect(id).toMatch(/^\d+$/);
    const [stored] = (await allEvents(t.url, 'scopePrefix=engine/render')) as any[];
    expect(stored).toMatchObject({ id, ...EVENT });
    expect(stored.ts).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    // Read straight from the database: stored before the answer.
    expect(t.service.db!.prepare('SELECT id FROM events WHERE id = ?').get(Number(id))).toBeDefined();

    const minimal = await t.post('/api/internal/bus', { severity: 'fallback', scope: 'x', summary: 'y' });
    expect(minimal.status).toBe(202);
    const { id: id2 } = (await minimal.json()) as { id: string };
    expect(BigInt(id2)).toBeGreaterThan(BigInt(id));
    const last = (await allEvents(t.url, 'scopePrefix=x')).at(-1);
    expect(last).toMatchObject({ id: id2, detail: null, payload: {} });
  });

  it('validates the event (422): the five severities, required members, no id or ts', async () => {
    t = await startTestService();
    const cases: [unknown, (string | number)[]][] = [
      [{ ...EVENT, severity: 'error' }, ['body', 'severity']],
      [{ severity: 'info', scope: 'a' }, ['body', 'summary']],
      [{ severity: 'info', summary: 'a' }, ['body', 'scope']],
      [{ ...EVENT, scope: '' }, ['body', 'scope']],
      [{ ...EVENT, scope: 'has space' }, ['body', 'scope']],
      [{ ...EVENT, scope: '/engine' }, ['body', 'scope']],
      [{ ...EVENT, scope: 'engine//x' }, ['body', 'scope']],
      [{ ...EVENT, payload: [1, 2] }, ['body', 'payload']],
      [{ ...EVENT, id: '99' }, ['body']],
      [{ ...EVENT, ts: '2026-01-01T00:00:00.000Z' }, ['body']],
    ];
    for (const [body, loc] of cases) {
      const res = await t.post('/api/internal/bus', body);
      expect(res.status, JSON.stringify(body)).toBe(422);
      const detail = ((await res.json()) as { detail: { loc: unknown[] }[] }).detail;
      expect(detail[0]?.loc).toEqual(loc);
    }
    expect(await allEvents(t.url, 'scopePrefix=engine/render')).toEqual([]);
  });

  it('refuses a caller on a non-loopback address (403), whatever X-Forwarded-For says, and accepts 127.0.0.1', async () => {
    const ns = makeNetns();
    try {
      // Every interface: the namespace's side of the pair and loopback.
      t = await startTestService({ env: { HOST: '0.0.0.0', CONSOLE_ALLOWED_HOSTS: ns.hostAddress } });
      const refused = await postFromNamespace(ns, ns.hostAddress, t.service.port, EVENT, { 'x-forwarded-for': '127.0.0.1', forwarded: 'for=127.0.0.1', 'x-real-ip': '127.0.0.1' });
      expect(refused.status).toBe(403);
      expect(refused.json.detail).toBe(`/api/internal/bus accepts loopback callers only (this request came from ${ns.nsAddress})`);
      // Refused before validation: an invalid body from outside is a 403 too.
      expect((await postFromNamespace(ns, ns.hostAddress, t.service.port, { nonsense: true })).status).toBe(403);
      expect(await allEvents(`http://127.0.0.1:${t.service.port}`, 'scopePrefix=engine/render')).toEqual([]);

      const accepted = await postFrom('127.0.0.1', t.service.port, '127.0.0.1', EVENT);
      expect(accepted.status).toBe(202);
      const evs = await allEvents(`http://127.0.0.1:${t.service.port}`, 'scopePrefix=engine/render');
      expect(evs.map((e) => e.id)).toEqual([accepted.json.id]);
    } finally {
      ns.close();
    }
  });

  it('refuses a loopback caller whose request came through a proxy: a proxy on this machine makes every caller local', async () => {
    t = await startTestService();
    const port = t.service.port;
    // What this service's own write proxy adds, and what other proxies add; any case of the name.
    const proxied: Record<string, string>[] = [
      { via: '1.1 console-backend-0a1b2c3d' },
      { forwarded: 'for=127.0.0.1;proto=http' },
      { 'x-forwarded-for': '127.0.0.1' },
      { 'X-Forwarded-Host': 'localhost' },
      { 'x-forwarded-proto': 'http' },
      { 'x-real-ip': '127.0.0.1' },
      { Via: 'HTTP/1.1 nginx' },
    ];
    for (const headers of proxied) {
      const res = await postFrom('127.0.0.1', port, '127.0.0.1', EVENT, headers);
      const name = Object.keys(headers)[0]!.toLowerCase();
      expect({ headers, status: res.status, detail: res.json.detail }).toEqual({
        headers,
        status: 403,
        detail: `/api/internal/bus accepts direct loopback callers only (this request came through a proxy: it carries ${name})`,
      });
      // Refused before validation.
      expect((await postFrom('127.0.0.1', port, '127.0.0.1', { nonsense: true }, headers)).status).toBe(403);
    }
    expect(await allEvents(t.url, 'scopePrefix=engine/render')).toEqual([]);
    // The same caller without them is served.
    expect((await postFrom('127.0.0.1', port, '127.0.0.1', EVENT)).status).toBe(202);
  });
});
