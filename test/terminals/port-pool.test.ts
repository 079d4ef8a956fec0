/**
 * Terminal ports: the lowest port of the range that no terminal holds and that can be bound;
 * concurrent reservations never share a port; exhaustion is an error naming the range.
 */
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { TerminalPortsExhaustedError } from '../../src/terminals/index.js';
import { isPortFree, PortPool } from '../../src/terminals/port-pool.js';

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** Binds a port of the OS's choosing on 127.0.0.1 and keeps it. */
async function occupy(port = 0): Promise<number> {
  const s = net.createServer();
  servers.push(s);
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.listen(port, '127.0.0.1', () => resolve());
  });
  return (s.address() as net.AddressInfo).port;
}

/** A port that was free a moment ago (its neighbours may not be). */
async function freePort(): Promise<number> {
  const p = await occupy();
  await new Promise((r) => (servers.pop() as net.Server).close(r));
  return p;
}

describe('PortPool', () => {
  it('skips ports bound by another program', async () => {
    const busy = await occupy();
    expect(await isPortFree('127.0.0.1', busy)).toBe(false);
    const pool = new PortPool(busy, busy, '127.0.0.1');
    await expect(pool.reserve()).rejects.toThrow(TerminalPortsExhaustedError);
    await expect(pool.reserve()).rejects.toThrow(`no free terminal port in ${busy}-${busy}`);
  });

  it('a port bound on every interface is busy for a terminal on loopback, too', async () => {
    const s = net.createServer();
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, '0.0.0.0', () => r()));
    const port = (s.address() as net.AddressInfo).port;
    expect(await isPortFree('127.0.0.1', port)).toBe(false);
  });

  it('hands out a port once until it is released, also to concurrent callers', async () => {
    const port = await freePort();
    const pool = new PortPool(port, port, '127.0.0.1');
    const results = await Promise.allSettled([pool.reserve(), pool.reserve()]);
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected']);
    expect(results.find((r) => r.status === 'fulfilled')).toMatchObject({ value: port });
    pool.release(port);
    expect(await pool.reserve()).toBe(port);
  });
});
