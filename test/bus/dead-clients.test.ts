/**
 * Slow and dead clients: event-stream clients that stop reading cost
 * bounded memory and are dropped once their queue passes CONSOLE_SSE_MAX_QUEUE_BYTES (the
 * drop itself is tested in test/http/stream.test.ts; here, the service's RSS while several
 * stalled clients are held against a flood); clients that vanish without closing are cleaned
 * up: after 1,000 connect/abort cycles (streams and ordinary requests, cut at random points:
 * before the headers, mid-replay with Last-Event-ID, mid-live; with a FIN or a reset) the
 * service's open sockets return to their start, the subscriber count to 0, and its handles
 * and heap do not grow. The compiled service runs as a separate process, measured in /proc.
 */
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { generate, MB, sampleMax, startServiceProcess, type ServiceProcess } from '../fixtures/rel-b-service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function start(env: Record<string, string> = {}): Promise<ServiceProcess> {
  const svc = await startServiceProcess({ env });
  cleanups.push(() => svc.close());
  return svc;
}

interface Status {
  bus: { subscribers: number; slowClientsDropped: number; lastEventId: string };
  jobs: { running: number };
}
/** GET /api/system-status on a connection of its own (closed after the answer). */
const status = async (svc: ServiceProcess) => (await rawRequest(svc.url, '/api/system-status')).json() as Status;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A deterministic pseudo-random source (mulberry32), so a failing run can be replayed. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function connect(port: number): Promise<net.Socket> {
  const sock = net.connect(port, '127.0.0.1');
  sock.on('error', () => {}); // resets are expected: the point is what the server does
  await once(sock, 'connect');
  return sock;
}

/** Resolves once `sock` has received `bytes` bytes (or a text `marker`), closed, or `ms` passed. */
function receive(sock: net.Socket, bytes: number, ms: number, marker?: string): Promise<void> {
  return new Promise((resolve) => {
    let got = 0;
    let text = '';
    const done = () => {
      clearTimeout(timer);
      sock.off('data', onData);
      sock.off('close', done);
      resolve();
    };
    const onData = (d: Buffer) => {
      got += d.length;
      if (marker !== undefined) text = (text + d.toString('latin1')).slice(-4096);
      if (got >= bytes && (marker === undefined || text.includes(marker))) done();
    };
    const timer = setTimeout(done, ms);
    sock.on('data', onData);
    sock.once('close', done);
  });
}

describe('slow clients', () => {
  it('stalled stream clients held against a flood cost bounded memory and are all dropped; a reading client gets every event', async () => {
    const STALLED = 8;
    const FLOOD = 300_000;
    const svc = await start();
    const maxQueue = 8 * 1048576; // the documented default of CONSOLE_SSE_MAX_QUEUE_BYTES

    // A client that reads everything, checking the ids it gets are increasing.
    const reader = await connect(Number(new URL(svc.url).port));
    cleanups.push(() => reader.destroy());
    let frames = 0;
    let lastId = 0;
    let ordered = true;
    let tail = '';
    reader.setEncoding('latin1');
    reader.on('data', (d: string) => {
      const text = tail + d;
      let at = 0;
      for (let i = text.indexOf('\nid: ', at); i !== -1; i = text.indexOf('\nid: ', at)) {
        const end = text.indexOf('\n', i + 5);
        if (end === -1) break;
        const id = Number(text.slice(i + 5, end));
        if (id <= lastId) ordered = false;
        lastId = id;
        frames++;
        at = end;
      }
      tail = text.slice(at);
    });
    reader.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');

    // Stalled clients: they send their request and never read a byte.
    const stalled: net.Socket[] = [];
    for (let i = 0; i < STALLED; i++) {
      const s = await connect(Number(new URL(svc.url).port));
      s.pause();
      s.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
      stalled.push(s);
      cleanups.push(() => s.destroy());
    }
    await waitFor(async () => ((await status(svc)).bus.subscribers === STALLED + 1 ? true : undefined), 'every client subscribed');
    const head = Number((await status(svc)).bus.lastEventId);
    const rssBefore = svc.rss();
    const rss = sampleMax(() => svc.rss(), 50);

    const t0 = Date.now();
    const { proposalId } = await generate(svc.url, `burst:${FLOOD}`);
    await waitFor(async () => ((await status(svc)).jobs.running === 0 ? true : undefined), 'the flood to end');
    // Spawn, every line, exit: the reading client gets them all, in order.
    await waitFor(() => (lastId >= head + FLOOD + 2 ? true : undefined), 'the reading client to get every event');
    const s = await waitFor(async () => {
      const st = await status(svc);
      return st.bus.subscribers === 1 ? st : undefined;
    }, 'the stalled clients to be dropped');
    const elapsed = Date.now() - t0;
    const rssMax = rss.stop();
    const rssAfter = svc.rss();

    expect(ordered).toBe(true);
    expect(frames).toBe(FLOOD + 2);
    expect(s.bus.slowClientsDropped).toBe(STALLED);
    for (const c of stalled) expect(c.destroyed || c.readableEnded || c.readable).toBe(true);
    // Frames are shared buffers: the stalled clients together hold about one bound, not eight.
    expect(rssMax - rssBefore).toBeLessThan(STALLED * maxQueue + 256 * 1048576);
    expect(rssMax).toBeLessThan(512 * 1048576);
    console.log(
      `dead-clients: ${STALLED} stalled stream clients against a flood of ${FLOOD.toLocaleString('en')} events (${proposalId}): all dropped at the ${MB(maxQueue)} MB bound, ` +
        `the reading client got all ${frames.toLocaleString('en')} in order, in ${(elapsed / 1000).toFixed(1)} s; service RSS ${MB(rssBefore)} MB before, max ${MB(rssMax)} MB, ${MB(rssAfter)} MB after`,
    );
  });
});

type Kind = 'stream-before-headers' | 'stream-mid-replay' | 'stream-mid-live' | 'get-before-headers' | 'get-mid-body' | 'post-mid-body' | 'get-complete';
const KINDS: Kind[] = ['stream-before-headers', 'stream-mid-replay', 'stream-mid-live', 'get-before-headers', 'get-mid-body', 'post-mid-body', 'get-complete'];

describe('dead clients', () => {
  it('1,000 connect/abort cycles at random points: sockets, subscribers and handles return to their start', async () => {
    const CYCLES = 1000;
    const PARALLEL = 8;
    const SEED = 0x5eed;
    const svc = await start({ CONSOLE_SSE_HEARTBEAT_MS: '1000', CONSOLE_EVENT_RETENTION: '100000' });
    const port = Number(new URL(svc.url).port);

    // Stored events to replay (about 12 MB: far more than a socket buffer holds).
    const filler = await generate(svc.url, 'burst:60000');
    await waitFor(async () => ((await status(svc)).jobs.running === 0 ? true : undefined), `the end of ${filler.proposalId}`);
    const head = Number((await status(svc)).bus.lastEventId);
    const before = await waitFor(() => {
      const fds = svc.fds();
      return fds.tcp === 1 ? fds : undefined; // the listening socket alone
    }, 'the warm-up connections to close');
    const snapBefore = await svc.snapshot();

    // Live events throughout: a job printing a line every 5 ms until cancelled.
    const live = await generate(svc.url, 'slow:1000000:5');

    const rnd = prng(SEED);
    const counts = Object.fromEntries(KINDS.map((k) => [k, 0])) as Record<Kind, number>;
    let resets = 0;
    let next = 0;
    const t0 = Date.now();
    const worker = async () => {
      while (next < CYCLES) {
        next++;
        const kind = KINDS[Math.floor(rnd() * KINDS.length)] as Kind;
        const reset = rnd() < 0.5;
        const r1 = rnd();
        const r2 = rnd();
        counts[kind]++;
        if (reset) resets++;
        const sock = await connect(port);
        const stream = (extra = '') => `GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n${extra}\r\n`;
        switch (kind) {
          case 'stream-before-headers': {
            // Any prefix of the request, the whole of it included; gone at once or a moment later.
            const req = stream();
            sock.write(req.slice(0, Math.floor(r1 * (req.length + 1))));
            if (r2 < 0.5) await sleep(Math.floor(r2 * 20));
            break;
          }
          case 'stream-mid-replay':
            sock.write(stream(`Last-Event-ID: ${Math.floor(r1 * head)}\r\n`));
            await receive(sock, Math.floor(r2 * 512 * 1024), 2000);
            break;
          case 'stream-mid-live':
            sock.write(stream());
            await receive(sock, Math.floor(r2 * 4096), 2000, 'retry:');
            break;
          case 'get-before-headers': {
            const req = 'GET /api/events?limit=500 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
            sock.write(req.slice(0, Math.floor(r1 * (req.length + 1))));
            break;
          }
          case 'get-mid-body':
            sock.write('GET /api/events?limit=500 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
            await receive(sock, Math.floor(r1 * 96 * 1024), 2000);
            break;
          case 'post-mid-body': {
            const body = JSON.stringify({ severity: 'info', scope: 'test/dead', summary: 'x'.repeat(2000) });
            sock.write(`POST /api/internal/bus HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
            sock.write(body.slice(0, Math.floor(r1 * body.length)));
            if (r2 < 0.5) await sleep(Math.floor(r2 * 20));
            break;
          }
          case 'get-complete':
            // A whole answer, then the kept-alive connection is dropped while idle.
            sock.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
            await receive(sock, 1, 2000, '{"ok":true}');
            break;
        }
        if (reset) sock.resetAndDestroy();
        else sock.destroy();
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const cyclesMs = Date.now() - t0;

    // The live job ends; then the service is back where it started.
    expect((await rawRequest(svc.url, `/api/jobs/${live.proposalId}/cancel`, { method: 'POST' })).status).toBe(202);
    await waitFor(async () => ((await status(svc)).jobs.running === 0 ? true : undefined), 'the live job to end');
    const st = await waitFor(async () => {
      const x = await status(svc);
      return x.bus.subscribers === 0 ? x : undefined;
    }, 'the subscriber count to return to 0').catch(async () => status(svc));
    const after = await waitFor(() => {
      const fds = svc.fds();
      return fds.tcp === before.tcp && fds.total === before.total ? fds : undefined;
    }, 'the socket count to return to its start').catch(() => svc.fds());
    // A handle held by work in flight (a worker-thread task's port, a timer) goes by itself; a
    // leaked one stays. So snapshots are taken until none is above its start, or the ceiling.
    const settled = (s: typeof snapBefore) => Object.entries(s.resources).every(([type, n]) => n <= (snapBefore.resources[type] ?? 0));
    let snapAfter = await svc.snapshot();
    let snapshots = 1;
    snapAfter = await waitFor(async () => {
      if (settled(snapAfter)) return snapAfter;
      snapAfter = await svc.snapshot();
      snapshots++;
      return undefined;
    }, 'the handles to return to their start').catch(() => snapAfter);
    const handles = (s: typeof snapBefore) =>
      Object.entries(s.resources)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
    console.log(
      `dead-clients: ${CYCLES} connect/abort cycles (${Object.entries(counts)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}; ${resets} by reset, the rest by FIN; ${PARALLEL} at a time, ${(cyclesMs / 1000).toFixed(1)} s): ` +
        `service TCP sockets ${before.tcp} before, ${after.tcp} after (all sockets ${before.sockets} → ${after.sockets}, descriptors ${before.total} → ${after.total}); subscribers ${st.bus.subscribers} after; ` +
        `heap after a full GC ${MB(snapBefore.heapUsed)} MB → ${MB(snapAfter.heapUsed)} MB; handles before: ${handles(snapBefore)}; after: ${handles(snapAfter)} (snapshot ${snapshots})`,
    );
    expect(st.bus.subscribers).toBe(0);
    expect(after).toEqual(before);
    // No handle (socket, timer…) is left behind by a client that went away.
    for (const [type, n] of Object.entries(snapAfter.resources)) expect(n, type).toBeLessThanOrEqual(snapBefore.resources[type] ?? 0);
    expect(snapAfter.heapUsed).toBeLessThan(snapBefore.heapUsed + 32 * 1048576);
  });
});
