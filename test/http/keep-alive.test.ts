/**
 * How long the service keeps an idle kept-alive connection (CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS, README,
 * Configuration): announced in each answer's `Keep-Alive: timeout=<s>`, kept, and then closed by the server
 * itself; reported among the limits of `GET /api/system-status`. A proxy keeping connections longer than the
 * service would reuse one the service is closing (a reset, a 502 to its client). No timing is asserted.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

async function serviceWith(ms: string): Promise<TestService> {
  const t = await startTestService({ store: 'empty', env: { CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: ms } });
  services.push(t);
  return t;
}

/** One GET /api/health on a raw connection: its answer's head, and a promise of the connection's end by the server. */
async function oneRequest(url: string): Promise<{ head: string; closed: Promise<void> }> {
  const { hostname, port } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  let text = '';
  socket.setEncoding('latin1');
  const head = new Promise<string>((resolve) => {
    socket.on('data', (chunk: string) => {
      text += chunk;
      const end = text.indexOf('\r\n\r\n');
      if (end >= 0) resolve(text.slice(0, end));
    });
  });
  socket.write(`GET /api/health HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: keep-alive\r\n\r\n`);
  return { head: await head, closed };
}

describe('CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS', () => {
  it('is announced in each answer and the server closes an idle connection itself once it passed', async () => {
    const t = await serviceWith('1000');
    const { head, closed } = await oneRequest(t.url);
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head).toMatch(/\r\nkeep-alive: timeout=1(\r\n|$)/i);
    expect(head).toMatch(/\r\nconnection: keep-alive(\r\n|$)/i);
    // Left idle, the connection is ended by the service (the test would time out otherwise).
    await closed;
  });

  it('keeps an idle connection as long as set, announced and reported among the limits', async () => {
    const t = await serviceWith('120000');
    const { head } = await oneRequest(t.url);
    expect(head).toMatch(/\r\nkeep-alive: timeout=120(\r\n|$)/i);
    const status = (await (await t.get('/api/system-status')).json()) as { limits: Record<string, number> };
    expect(status.limits.CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS).toBe(120_000);
  });
});
