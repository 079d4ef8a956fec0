/**
 * DNS rebinding is refused, through the real server: bound to a loopback
 * address, the service answers only requests whose Host is a loopback name (any port) or one
 * listed in CONSOLE_ALLOWED_HOSTS; others get 421 with a detail and change nothing. Bound to
 * another address, the allow-list applies once it is set. Requests are sent as raw bytes, so
 * that any Host (or none) reaches the service as written.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { rawExchange, type RawResponse } from '../helpers/raw.js';
import { startTestService, type TestService } from '../helpers/service.js';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
});

async function start(env: Record<string, string> = {}): Promise<TestService> {
  const t = await startTestService({ env });
  services.push(t);
  return t;
}

/** `GET /api/health` with the given Host header line (none when null). */
const health = (t: TestService, host: string | null, target = '/api/health', version = '1.1'): Promise<RawResponse> =>
  rawExchange(t.url, `GET ${target} HTTP/${version}${host === null ? '' : `\r\nHost: ${host}`}`);

/** Loopback names, in every form a client may write them: any port, any case, a trailing dot, IPv6, other IPv4 spellings. */
const LOOPBACK = [
  'localhost',
  'localhost:1',
  'LOCALHOST:8431',
  'LocalHost.',
  'localhost.:80',
  '127.0.0.1',
  '127.0.0.1:65535',
  '127.8.9.10:5',
  '127.1',
  '[::1]',
  '[::1]:8431',
  '[0:0:0:0:0:0:0:1]:80',
  '[::ffff:127.0.0.1]',
];

/** Hosts a rebinding page (or a confused client) sends: other names, look-alikes, and malformed values. */
const FOREIGN = [
  'evil.example',
  'evil.example:8431',
  'attacker.localhost',
  'localhost.evil.example',
  '127.0.0.1.evil.example',
  'localhost.evil',
  'xlocalhost',
  '0.0.0.0',
  '10.0.0.1:8431',
  '128.0.0.1',
  '[::2]',
  '[fe80::1]',
  'user@localhost',
  'localhost@evil.example',
  'localhost:8431@evil.example',
  'local%68ost',
  'localhost:abc',
  'localhost:99999',
  'localhost..',
  'localhost/',
  'localhost,evil.example',
  '[::1]x',
  '',
];

const DETAIL = /is not served here: .*loopback names \(localhost, 127\.0\.0\.1, \[::1\], any port\).*CONSOLE_ALLOWED_HOSTS/;

describe('the Host check on a service bound to loopback', () => {
  it('serves loopback names with any port, and refuses every other Host with 421 and a detail', async () => {
    const t = await start();
    for (const host of LOOPBACK) expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 200 });
    for (const host of FOREIGN) {
      const res = await health(t, host);
      expect({ host, status: res.status }).toEqual({ host, status: 421 });
      const detail = res.json().detail as string;
      expect(detail).toMatch(DETAIL);
      expect(detail).toContain(JSON.stringify(host));
    }
    // HTTP/1.0 may omit Host: not served either. (HTTP/1.1 without one is Node's own 400.)
    const none = await health(t, null, '/api/health', '1.0');
    expect(none.status).toBe(421);
    expect(none.json().detail).toMatch(/^a request without a Host header is not served here/);
    // An absolute-form target names the host too (it wins over Host): both must be served.
    const absolute = await health(t, 'localhost', 'http://evil.example/api/health');
    expect(absolute.status).toBe(421);
    expect(absolute.json().detail).toMatch(/^the request target's host "evil\.example" is not served here/);
    expect((await health(t, 'localhost', `http://127.0.0.1:${t.service.port}/api/health`)).status).toBe(200);
  });

  it('refuses before anything acts: no write, no preflight, no token check, no proxy', async () => {
    const t = await start({ CONSOLE_API_TOKEN: 'tok-host' });
    const auth = 'Authorization: Bearer tok-host\r\nContent-Type: application/json';
    const writes = [
      `POST /api/proposals HTTP/1.1\r\nHost: evil.example:${t.service.port}\r\n${auth}`,
      `POST /api/internal/bus HTTP/1.1\r\nHost: evil.example\r\n${auth}`,
      `PUT /api/workspace-state/w1 HTTP/1.1\r\nHost: 192.0.2.1\r\n${auth}`,
    ];
    const bodies = [JSON.stringify({ title: 'rebound' }), JSON.stringify({ severity: 'info', scope: 'test/host', summary: 'rebound' }), JSON.stringify({ revision: 0, state: {} })];
    for (let i = 0; i < writes.length; i++) expect((await rawExchange(t.url, writes[i] as string, bodies[i])).status).toBe(421);
    // A preflight and an unauthenticated request get the same 421 (not a 204, not a 401).
    expect((await rawExchange(t.url, 'OPTIONS /api/proposals HTTP/1.1\r\nHost: evil.example\r\nOrigin: http://localhost:5173\r\nAccess-Control-Request-Method: POST')).status).toBe(421);
    expect((await health(t, 'evil.example', '/api/system-status')).status).toBe(421);
    // Nothing was stored.
    const headers = { authorization: 'Bearer tok-host' };
    expect(await (await t.get('/api/proposals', { headers })).json()).toEqual([]);
    expect(await (await t.get('/api/events?scopePrefix=test/host', { headers })).json()).toEqual([]);
    expect((await t.get('/api/workspace-state/w1', { headers })).status).toBe(404);
    // The status reports the check.
    expect(((await (await t.get('/api/system-status', { headers })).json()) as { hosts: unknown }).hosts).toEqual({ enforced: true, allowed: [] });
  });

  it('serves the hosts of CONSOLE_ALLOWED_HOSTS: a name alone on any port, a name with a port on that port only', async () => {
    // `console_app`: a container network's name (a Compose service), with `_`.
    const t = await start({ CONSOLE_ALLOWED_HOSTS: 'console.example, mesh-a:8431, 10.1.2.3, console_app' });
    for (const host of ['console.example', 'console.example:1234', 'CONSOLE.EXAMPLE.', 'mesh-a:8431', 'Mesh-A.:8431', '10.1.2.3:9', 'localhost:5', '[::1]', 'Console_App:8431']) {
      expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 200 });
    }
    for (const host of ['mesh-a', 'mesh-a:8432', 'sub.console.example', 'console.example.evil', '10.1.2.4', 'evil.example', 'console_app.evil', 'console-app']) {
      expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 421 });
    }
  });
});

describe('the Host check on a service bound beyond loopback', () => {
  it('serves every Host while CONSOLE_ALLOWED_HOSTS is unset, as before', async () => {
    const t = await start({ HOST: '0.0.0.0' });
    for (const host of ['evil.example', 'anything:1', '10.0.0.1', 'localhost']) expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 200 });
    expect(((await (await t.get('/api/system-status')).json()) as { hosts: unknown }).hosts).toEqual({ enforced: false, allowed: [] });
  });

  it('applies CONSOLE_ALLOWED_HOSTS once set', async () => {
    const t = await start({ HOST: '0.0.0.0', CONSOLE_ALLOWED_HOSTS: 'console.example' });
    for (const host of ['console.example:8431', 'localhost', '127.0.0.1:1']) expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 200 });
    for (const host of ['evil.example', '10.0.0.1', '']) expect({ host, status: (await health(t, host)).status }).toEqual({ host, status: 421 });
    // (The service's own URL names 0.0.0.0, which is not a loopback name: it is refused too.)
    expect((await t.get('/api/health')).status).toBe(421);
    const status = await fetch(`http://127.0.0.1:${t.service.port}/api/system-status`);
    expect(((await status.json()) as { hosts: unknown }).hosts).toEqual({ enforced: true, allowed: ['console.example'] });
  });
});
