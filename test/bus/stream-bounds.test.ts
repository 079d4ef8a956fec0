/**
 * Bounds on what event streams may take, whoever opens them (src/bus/sse.ts): streams in all and
 * per remote address (refused before they open, 503 or 429 with Retry-After, the connection
 * closed); the descriptor limit raised at start-up and the stream bound kept at half of it;
 * one bound on the bytes queued for all clients together, whose frames are slices of one
 * encoding per batch whatever their filters; replays from the database a few at a time, none held by a
 * client that does not read. The service runs as its own process where its
 * memory or descriptors are measured (test/fixtures/rel-b-service.ts).
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

async function start(env: Record<string, string> = {}, wrapper?: string[]): Promise<ServiceProcess> {
  const svc = await startServiceProcess({ env, ...(wrapper ? { wrapper } : {}) });
  cleanups.push(() => svc.close());
  return svc;
}

interface Streams {
  open: number;
  maxStreams: number;
  maxStreamsPerAddress: number;
  refusedTotal: number;
  refusedPerAddress: number;
  queuedBytes: number;
  totalQueueBytes: number;
  droppedOverTotal: number;
  databaseReplays: number;
  databaseReplaysWaiting: number;
}
interface Status {
  bus: { subscribers: number; slowClientsDropped: number; streams: Streams };
  descriptors: { soft: number; hard: number; raisedFrom: number | null; open: number | null };
  jobs: { running: number };
}
const status = async (svc: ServiceProcess) => (await rawRequest(svc.url, '/api/system-status')).json() as Status;

/**
 * A stream request on a raw socket from `localAddress` (any 127.0.0.0/8 address: the service
 * sees it as the client's), never read past the status line unless `read`.
 * @returns the socket, and the status line's code once it came.
 */
async function openStream(svc: ServiceProcess, localAddress = '127.0.0.1', query = '', read = false): Promise<{ sock: net.Socket; status: number; headers: string }> {
  const sock = net.connect({ port: Number(new URL(svc.url).port), host: '127.0.0.1', localAddress });
  sock.on('error', () => {});
  cleanups.push(() => sock.destroy());
  await once(sock, 'connect');
  sock.write(`GET /api/events/stream${query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  let head = '';
  await new Promise<void>((resolve) => {
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        sock.off('data', onData);
        if (!read) sock.pause();
        resolve();
      }
    };
    sock.on('data', onData);
    sock.once('close', () => resolve());
  });
  return { sock, status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), headers: head };
}

describe('the number of streams', () => {
  it('is bounded in all (503) and per remote address (429), with Retry-After, refused before anything opens and counted; freed ones admit again', async () => {
    const svc = await start({ CONSOLE_SSE_MAX_STREAMS: '6', CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS: '4' });
    const a = [];
    for (let i = 0; i < 4; i++) a.push(await openStream(svc, '127.0.0.1'));
    expect(a.map((s) => s.status)).toEqual([200, 200, 200, 200]);
    const fifth = await openStream(svc, '127.0.0.1');
    expect(fifth.status).toBe(429);
    expect(fifth.headers).toMatch(/\r\nRetry-After: \d+\r\n/i);
    expect(fifth.headers).toMatch(/\r\nConnection: close\r\n/i);
    // Another address is not held by the first's bound, until the bound in all.
    const b = [await openStream(svc, '127.0.0.2'), await openStream(svc, '127.0.0.2')];
    expect(b.map((s) => s.status)).toEqual([200, 200]);
    const seventh = await openStream(svc, '127.0.0.3');
    expect(seventh.status).toBe(503);
    expect(seventh.headers).toMatch(/\r\nRetry-After: \d+\r\n/i);
    // HEAD opens no stream: never refused for the bound.
    expect((await rawRequest(svc.url, '/api/events/stream', { method: 'HEAD' })).status).toBe(200);
    const s = await status(svc);
    expect(s.bus.streams).toMatchObject({ open: 6, maxStreams: 6, maxStreamsPerAddress: 4, refusedTotal: 1, refusedPerAddress: 1 });
    // One closed: a stream opens again.
    a[0]!.sock.destroy();
    await waitFor(async () => ((await status(svc)).bus.streams.open === 5 ? true : undefined), 'the closed stream gone');
    expect((await openStream(svc, '127.0.0.3')).status).toBe(200);
  });

  it('with few descriptors, hundreds of idle streams are refused promptly and never starve health or generation', async () => {
    // 256 descriptors, soft and hard: the limit cannot be raised, and the bound is half of it.
    // (Fewer makes start-up itself flaky on a loaded machine: the module loader and the worker
    // threads open module files side by side, more of them at once the slower they go.)
    const svc = await start({}, ['prlimit', '--nofile=256:256', '--']);
    const first = await status(svc);
    expect(first.descriptors).toMatchObject({ soft: 256, hard: 256, raisedFrom: null });
    expect(first.bus.streams.maxStreams).toBe(128);
    const codes: number[] = [];
    // Twenty at a time: the service has descriptors for them beside its 128 streams.
    for (let batch = 0; batch < 15; batch++) {
      const answers = await Promise.all(Array.from({ length: 20 }, () => openStream(svc, `127.0.0.${2 + batch}`)));
      codes.push(...answers.map((x) => x.status));
      // The refused ones were answered and their connections closed: nothing of them is held.
      for (const x of answers) if (x.status !== 200) x.sock.destroy();
    }
    expect(codes.filter((c) => c === 200)).toHaveLength(128);
    expect(codes.filter((c) => c === 503)).toHaveLength(300 - 128);
    // The service still answers everything else, and starts a job (its pipes need descriptors).
    expect((await rawRequest(svc.url, '/api/health')).status).toBe(200);
    const { proposalId } = await generate(svc.url, 'burst:3');
    expect(proposalId).toMatch(/^gen_/);
    const s = await status(svc);
    expect(s.bus.streams).toMatchObject({ open: 128, refusedTotal: 300 - 128 });
    expect(s.descriptors.open).toBeLessThan(256);
  });

  it('runs with the soft descriptor limit raised to the hard one, and bounds the streams at half of it', async () => {
    // Node.js raises it itself at start-up on Linux; the service does when it did not.
    const svc = await start({}, ['prlimit', '--nofile=256:4096', '--']);
    const s = await status(svc);
    expect(s.descriptors).toMatchObject({ soft: 4096, hard: 4096 });
    expect(s.bus.streams.maxStreams).toBe(1000);
    const low = await start({ CONSOLE_SSE_MAX_STREAMS: '100000' }, ['prlimit', '--nofile=600:600', '--']);
    expect((await status(low)).bus.streams.maxStreams).toBe(300);
  });
});

describe('the bytes queued for all streams together', () => {
  it('stay bounded: never-reading clients with distinct filters are dropped past CONSOLE_SSE_TOTAL_QUEUE_BYTES; a reading client gets every event', async () => {
    const STALLED = 30;
    const FLOOD = 200_000;
    const total = 4 * 1048576;
    const svc = await start({ CONSOLE_SSE_TOTAL_QUEUE_BYTES: String(total) });
    const reader = await openStream(svc, '127.0.0.1', '', true);
    let frames = 0;
    // A frame's "\nid: " can be split between two chunks: the last 4 bytes of one are searched
    // again with the next (too short to hold a whole match, so none is counted twice).
    let tail = Buffer.alloc(0);
    reader.sock.on('data', (chunk: Buffer) => {
      const d = Buffer.concat([tail, chunk]);
      for (let i = d.indexOf('\nid: '); i !== -1; i = d.indexOf('\nid: ', i + 1)) frames++;
      tail = d.subarray(Math.max(0, d.length - 4));
    });
    // Distinct filters, each passing the flood: each would hold its own copy without one encoding.
    const prefixes = ['e', 'en', 'eng', 'engi', 'engin', 'engine', 'engine/', 'engine/g', 'engine/ge', 'engine/gen'];
    const severities = ['', '&severities=info', '&severities=info&severities=warning'];
    for (let i = 0; i < STALLED; i++) {
      const q = `?scopePrefix=${encodeURIComponent(prefixes[i % prefixes.length] as string)}${severities[Math.floor(i / prefixes.length)]}`;
      expect((await openStream(svc, `127.0.0.${2 + (i % 50)}`, q)).status).toBe(200);
    }
    await waitFor(async () => ((await status(svc)).bus.subscribers === STALLED + 1 ? true : undefined), 'every client subscribed');
    const rssBefore = svc.rss();
    const rss = sampleMax(() => svc.rss(), 50);
    let queuedMax = 0;
    const watching = (async () => {
      for (;;) {
        const st = await status(svc);
        queuedMax = Math.max(queuedMax, st.bus.streams.queuedBytes);
        if (st.bus.subscribers === 1 && st.jobs.running === 0) return st;
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await generate(svc.url, `burst:${FLOOD}`);
    const s = await waitFor(() => watching, 'the flood to end and the stalled clients to be dropped');
    await waitFor(() => (frames >= FLOOD + 2 ? true : undefined), 'the reading client to get every event');
    const rssMax = rss.stop();
    expect(s.bus.streams.droppedOverTotal).toBeGreaterThan(0);
    expect(s.bus.slowClientsDropped).toBe(STALLED);
    expect(frames).toBe(FLOOD + 2);
    // Without the bound and the shared encoding, 30 distinct filters could hold 30 × 8 MiB.
    expect(rssMax - rssBefore).toBeLessThan(128 * 1048576);
    console.log(
      `stream-bounds: ${STALLED} never-reading streams with distinct filters against ${FLOOD.toLocaleString('en')} events: all dropped (${s.bus.streams.droppedOverTotal} to keep the ${MB(total)} MB total), ` +
        `queued at most ${MB(queuedMax)} MB seen; RSS ${MB(rssBefore)} MB before, max ${MB(rssMax)} MB; the reading client got all ${frames.toLocaleString('en')}`,
    );
  });
});

describe('replays from the database', () => {
  it('take turns (CONSOLE_SSE_MAX_DATABASE_REPLAYS), and a client that stops reading gives its turn up: the others replay everything', async () => {
    const EVENTS = 50_000;
    // Nothing kept in memory: every resume reads the database; one replay at a time.
    const svc = await start({ CONSOLE_SSE_MAX_DATABASE_REPLAYS: '1', CONSOLE_SSE_REPLAY_MEMORY_BYTES: '0' });
    await generate(svc.url, `burst:${EVENTS}`);
    await waitFor(async () => ((await status(svc)).jobs.running === 0 ? true : undefined), 'the job to end');
    // The stalled client: its replay fills the socket and waits for a drain that never comes (megabytes of events).
    const stalled = await openStream(svc, '127.0.0.2', '?sinceId=0');
    expect(stalled.status).toBe(200);
    await waitFor(async () => ((await status(svc)).bus.subscribers === 1 ? true : undefined), 'the stalled client subscribed');
    // Two readers resume from the start after it: each gets every event once, in order.
    const readers = await Promise.all(
      ['127.0.0.3', '127.0.0.4'].map(async (address) => {
        // Paused after the head: nothing is read before the listener is on (the head's chunk may hold the first frames).
        const r = await openStream(svc, address, '?sinceId=0');
        let text = r.headers.slice(r.headers.indexOf('\r\n\r\n') + 4);
        r.sock.setEncoding('latin1');
        r.sock.on('data', (d: string) => {
          text += d;
        });
        r.sock.resume();
        return { r, ids: () => [...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])) };
      }),
    );
    for (const reader of readers) {
      const ids = await waitFor(
        () => {
          const got = reader.ids();
          return got.length >= EVENTS + 2 ? got : undefined;
        },
        'a reader to replay every event while the stalled client holds its socket full',
        120_000,
      );
      expect(ids).toHaveLength(EVENTS + 2);
      expect(ids.every((id, i) => i === 0 || id > (ids[i - 1] as number))).toBe(true);
    }
    const s = await status(svc);
    // The stalled client is still open (nothing live passed its bound) and reads nothing: no turn held, none waiting.
    expect(s.bus.subscribers).toBe(3);
    expect(s.bus.streams).toMatchObject({ databaseReplays: 0, databaseReplaysWaiting: 0 });
  });
});
