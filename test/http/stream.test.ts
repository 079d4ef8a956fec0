/**
 * `GET /api/events/stream` through the real server on port 0 (api-decisions.md, "Event
 * stream"): headers, the `retry:` line, frames, heartbeats, filters, resume with
 * `Last-Event-ID` / `sinceId` without gap or duplicate, the slow-client bound, and shutdown.
 * Events are published on the running service's bus, or by real generation jobs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BusEvent, EventInput } from '../../src/bus/event.js';
import { waitCeilingMs } from '../helpers/ceilings.js';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { fixture, startTestService, type TestService, type TestServiceOptions, publishOn, storedOn } from '../helpers/service.js';
import { rawExchange } from '../helpers/raw.js';
import { SseClient } from '../helpers/sse.js';

let services: TestService[] = [];
let clients: SseClient[] = [];
let sockets: net.Socket[] = [];
let timers: NodeJS.Timeout[] = [];
afterEach(async () => {
  for (const tm of timers) clearInterval(tm);
  for (const c of clients) c.close();
  for (const s of sockets) s.destroy();
  for (const s of services) await s.close();
  services = [];
  clients = [];
  sockets = [];
  timers = [];
});

async function start(env: Record<string, string> = {}, opts: TestServiceOptions = {}): Promise<TestService> {
  const t = await startTestService({ store: 'empty', ...opts, env: { ...opts.env, ...env } });
  services.push(t);
  return t;
}

const streamUrl = (t: TestService, query = '') => `${t.url}/api/events/stream${query ? `?${query}` : ''}`;

/** Opens a stream and waits for its first frame: from then on the client is subscribed. */
async function open(t: TestService, query = '', headers: Record<string, string> = {}): Promise<SseClient> {
  const c = new SseClient(streamUrl(t, query), headers);
  clients.push(c);
  await c.until((x) => x.frames.length > 0, 'the first frame');
  return c;
}

function publishMany(t: TestService, n: number, make: (i: number) => Partial<EventInput> = () => ({})): BusEvent[] {
  return Array.from({ length: n }, (_, i) => publishOn(t, { severity: 'info', scope: 'test/stream', summary: `e${i}`, ...make(i) }));
}

const ids = (evs: readonly { id: string }[]) => evs.map((e) => e.id);
const tick = () => new Promise((r) => setImmediate(r));

async function streamsStatus(t: TestService): Promise<{ queuedBytes: number }> {
  const res = await t.get('/api/system-status');
  return ((await res.json()) as { bus: { streams: { queuedBytes: number } } }).bus.streams;
}

async function busStatus(t: TestService): Promise<{ subscribers: number; slowClientsDropped: number }> {
  const res = await t.get('/api/system-status');
  return ((await res.json()) as { bus: { subscribers: number; slowClientsDropped: number } }).bus;
}

/** Resolves with `p`, or rejects after a ceiling (a safety net, never an assertion on time). */
async function within<T>(p: Promise<T>, what: string, ceilingMs = waitCeilingMs()): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`gave up waiting for ${what}`)), ceilingMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Reads a stream's body as raw text, to check the bytes on the wire. */
class RawStream {
  text = '';
  status = 0;
  headers: Headers | undefined;
  private readonly ac = new AbortController();
  readonly done: Promise<void>;

  constructor(url: string, headers: Record<string, string> = {}) {
    this.done = (async () => {
      try {
        const res = await fetch(url, { headers, signal: this.ac.signal });
        this.status = res.status;
        this.headers = res.headers;
        const dec = new TextDecoder();
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) this.text += dec.decode(chunk, { stream: true });
      } catch {
        // aborted
      }
    })();
  }

  until(pred: (text: string) => boolean, what: string): Promise<void> {
    return waitFor(() => (pred(this.text) ? true : undefined), what).then(() => undefined);
  }

  close(): void {
    this.ac.abort();
  }
}

/** The exact bytes of one event frame. */
const frameOf = (e: BusEvent | EngineEvent) => `id: ${e.id}\ndata: ${JSON.stringify(e)}\n\n`;

/** Complete `id:`/`data:` frames in raw stream text (a cut last frame is ignored). */
function parseFrames(text: string): EngineEvent[] {
  const out: EngineEvent[] = [];
  for (const m of text.matchAll(/(?<=^|\n)id: (\d+)\ndata: ([^\n]*)\n\n/g)) {
    const e = JSON.parse(m[2] as string) as EngineEvent;
    expect(e.id).toBe(m[1]);
    out.push(e);
  }
  return out;
}

describe('event stream: protocol', () => {
  it('answers 200 with text/event-stream, no-cache, X-Accel-Buffering: no, and a retry line first', async () => {
    const t = await start({ CONSOLE_SSE_RETRY_MS: '1234' });
    const c = await open(t);
    expect(c.status).toBe(200);
    expect(c.headers?.get('content-type')).toMatch(/^text\/event-stream/);
    expect(c.headers?.get('cache-control')).toBe('no-cache');
    expect(c.headers?.get('x-accel-buffering')).toBe('no');
    expect(c.frames[0]).toEqual({ retry: 1234 });
  });

  it('writes each event as exactly `id: <id>` and `data: <event JSON>`, with no event line', async () => {
    const t = await start({ CONSOLE_SSE_RETRY_MS: '4321' });
    const raw = new RawStream(streamUrl(t));
    await raw.until((s) => s.includes('\n\n'), 'the retry frame');
    const evs = [
      publishOn(t, { severity: 'info', scope: 'test/raw', summary: 'plain' }),
      publishOn(t, {
        severity: 'failure',
        scope: 'test/raw',
        summary: 'line one\nline two\r\nthree', // newlines in a summary must not break the frame
        detail: 'data: not a field\n\nid: 999',
        payload: { text: 'é ✓ 😀', nested: { a: [1, 2] } },
      }),
      publishOn(t, { severity: 'success', scope: 'test/raw', summary: 'last' }),
    ];
    const expected = `retry: 4321\n\n${evs.map(frameOf).join('')}`;
    // Heartbeats (every 15 s by default) may land anywhere on a slow machine: leave them out.
    const strip = (s: string) => s.replaceAll(': ping\n\n', '');
    await raw.until((s) => strip(s).length >= expected.length, 'three event frames');
    raw.close();
    expect(strip(raw.text)).toBe(expected);
    expect(raw.text).not.toMatch(/^event:/m);
    // The data of each frame is the event exactly as `GET /api/events` serves it.
    expect(parseFrames(raw.text)).toEqual(await allEvents(t.url));
  });

  it('sends `: ping` comments at the configured heartbeat interval', async () => {
    const t = await start({ CONSOLE_SSE_HEARTBEAT_MS: '100' });
    const c = await open(t);
    await c.until((x) => x.frames.filter((f) => f.comment === 'ping').length >= 2, 'two heartbeats');
    for (const f of c.frames.filter((x) => x.comment !== undefined)) expect(f).toEqual({ comment: 'ping' });
    expect(c.events).toEqual([]);

    const raw = new RawStream(streamUrl(t));
    await raw.until((s) => s.includes('\n: ping\n\n'), 'a raw heartbeat');
    raw.close();
  });

  it('answers 422 (not a stream) for an unknown severity or a bad sinceId', async () => {
    const t = await start();
    for (const q of ['severities=bogus', 'severities=info&severities=nope', 'sinceId=abc', 'sinceId=-1']) {
      const res = await t.get(`/api/events/stream?${q}`);
      expect(res.status, q).toBe(422);
      expect(res.headers.get('content-type'), q).toMatch(/^application\/json/);
      const body = (await res.json()) as { detail: { loc: string[] }[] };
      expect(body.detail[0]?.loc[0], q).toBe('query');
    }
    expect((await busStatus(t)).subscribers).toBe(0);
  });
});

describe('event stream: live delivery', () => {
  it('delivers live events in order, each once, across many flushes', async () => {
    const t = await start();
    publishMany(t, 5); // published before connecting: not part of a live-only stream
    const c = await open(t);
    const published: BusEvent[] = [];
    for (let batch = 0; batch < 20; batch++) {
      published.push(...publishMany(t, 1 + batch * 3));
      if (batch % 3 === 0) await tick();
    }
    await c.until((x) => x.events.length >= published.length, 'every live event');
    expect(c.events).toEqual(published);
    expect(ids(c.events)).toEqual(ids(await allEvents(t.url, '', String(Number(published[0]?.id) - 1))));
  });

  it('applies severities (single and repeated) and scopePrefix to live events', async () => {
    const t = await start();
    const queries = ['severities=failure', 'severities=info&severities=warning', 'scopePrefix=engine/', 'severities=success&scopePrefix=chat', ''];
    const streams = await Promise.all(queries.map((q) => open(t, q)));
    const sevs = ['info', 'success', 'failure', 'warning', 'fallback'] as const;
    const scopes = ['engine/generation', 'chat/engine', 'engineering', 'chat/slash'];
    const published = publishMany(t, 100, (i) => ({ severity: sevs[i % 5], scope: scopes[i % 4] }));
    const expected = [
      published.filter((e) => e.severity === 'failure'),
      published.filter((e) => e.severity === 'info' || e.severity === 'warning'),
      published.filter((e) => e.scope.startsWith('engine/')),
      published.filter((e) => e.severity === 'success' && e.scope.startsWith('chat')),
      published,
    ];
    for (const [i, c] of streams.entries()) {
      const want = expected[i] as BusEvent[];
      expect(want.length, queries[i]).toBeGreaterThan(0);
      await c.until((x) => x.events.length >= want.length, `events of ${queries[i]}`);
      expect(c.events, queries[i]).toEqual(want);
    }
    // A final event that only the unfiltered stream wants: no filtered stream receives extras.
    const last = publishOn(t, { severity: 'fallback', scope: 'zzz', summary: 'last' });
    await (streams[4] as SseClient).until((x) => x.events.at(-1)?.id === last.id, 'the last event');
    for (const [i, c] of streams.entries()) if (i < 4) expect(c.events, queries[i]).toEqual(expected[i]);
  });

  it('streams the events of a real generation job in order: spawn, every line, exit', async () => {
    const t = await start(
      { EV_LINES: '2000', EV_BATCH: '100' },
      {
        store: 'sample',
        env: { DISPATCH_CLI: fixture('ev-lines.mjs') },
      },
    );
    const c = await open(t, 'scopePrefix=engine/generation');
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    await c.until((x) => x.events.some((e) => e.summary.startsWith('dispatch_cli exited')), 'the exit event');
    const mine = c.events;
    expect(mine[0]?.summary).toMatch(/^dispatch_cli spawned pid=\d+$/);
    expect(mine[0]?.payload.proposal_id).toBe(proposalId);
    expect(mine.slice(1, -1).map((e) => e.summary)).toEqual(Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`));
    expect(mine.at(-1)).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0', payload: { proposal_id: proposalId, rc: 0 } });
    expect(ids(mine)).toEqual(ids(await allEvents(t.url, 'scopePrefix=engine/generation')));
  });

  it('removes a client that goes away from the subscriber count', async () => {
    const t = await start();
    const a = await open(t);
    const b = await open(t);
    expect((await busStatus(t)).subscribers).toBe(2);
    a.close();
    await waitFor(async () => ((await busStatus(t)).subscribers === 1 ? true : undefined), 'one subscriber left');
    const e = publishMany(t, 1)[0] as BusEvent;
    await b.until((x) => x.events.length === 1, 'the event on the remaining stream');
    expect(b.events).toEqual([e]);
  });
});

/** The replay's sources: the database only, its pages shared between streams (src/bus/replay-cache.ts) or read for
 * each stream alone, and memory first (src/bus/recent-events.ts). */
const REPLAY_SOURCES = [
  { source: 'the database', env: { CONSOLE_SSE_REPLAY_MEMORY_BYTES: '0' } },
  { source: 'the database, for each stream alone', env: { CONSOLE_SSE_REPLAY_MEMORY_BYTES: '0', CONSOLE_SSE_REPLAY_CACHE_BYTES: '0' } },
  { source: 'memory', env: {} as Record<string, string> },
] as const;

async function replayStats(t: TestService): Promise<{ pagesFromMemory: number; pagesFromDatabase: number; cache: { threadReads: number; threadFailures: number } }> {
  const res = await t.get('/api/system-status');
  return ((await res.json()) as { bus: { replay: Awaited<ReturnType<typeof replayStats>> } }).bus.replay;
}

describe.each(REPLAY_SOURCES)('event stream: resume, replayed from $source', ({ source, env }) => {
  it('replays every stored event after Last-Event-ID, then live ones, with no gap and no duplicate', async () => {
    const t = await start(env);
    const bus = t.service.deps.bus;
    const pad = 'p'.repeat(1024); // big frames: the replay takes several pages and drains
    const make =
      (tag: string) =>
      (i: number): Partial<EventInput> => ({ summary: `${tag}${i}`, payload: { pad } });
    const initial = publishMany(t, 1500, make('before '));
    await storedOn(t); // stored: the replay reads them
    const from = (initial[199] as BusEvent).id;

    // Publish while the replay runs: from a timer, and deterministically between replay pages
    // (each page is one readFramesAfter call).
    let n = 0;
    // Each page is one read of the replay's source: the bus's database read, or the memory's.
    const memory = (t.service.deps.sse as unknown as { recent: { framesAfter: (...a: unknown[]) => unknown } }).recent;
    const target = (source === 'memory' ? memory : bus) as unknown as Record<string, (...a: unknown[]) => unknown>;
    // The database's pages are read by the replay thread (readFrameBlock), or here when it cannot.
    const methods = source === 'memory' ? ['framesAfter'] : ['readFramesAfter', 'readFrameBlock'];
    const originals = methods.map((m) => [m, target[m]?.bind(target)] as const);
    let pagesRead = 0;
    const restore = () => {
      for (const [m, read] of originals) if (read) target[m] = read;
    };
    for (const [m, read] of originals) {
      if (!read) continue;
      target[m] = (...args: unknown[]) => {
        pagesRead++;
        publishMany(t, 3, make(`page ${pagesRead} `));
        return read(...args);
      };
    }
    timers.push(setInterval(() => publishMany(t, 5, make(`timer ${n++} `)), 1));
    try {
      const c = new SseClient(streamUrl(t), { 'Last-Event-ID': from });
      clients.push(c);
      await c.until((x) => x.events.length >= 1300 + 200, 'the replay and some live events');
      clearInterval(timers.pop());
      restore();
      expect(pagesRead).toBeGreaterThanOrEqual(3); // 1,300 stored events are more than two 500-row pages
      const last = publishMany(t, 1, make('last '))[0] as BusEvent;
      await c.until((x) => x.events.at(-1)?.id === last.id, 'the last live event');

      const got = ids(c.events);
      // Exactly the ids after `from`, contiguous (one service run hands out consecutive ids).
      const want = Array.from({ length: Number(last.id) - Number(from) }, (_, i) => String(Number(from) + 1 + i));
      expect(got.length).toBe(want.length);
      expect(got).toEqual(want);
      expect(got).toEqual(ids(await allEvents(t.url, '', from)));
      expect(c.events.slice(0, 1300)).toEqual(initial.slice(200));
      const stats = await replayStats(t);
      if (source === 'memory') expect(stats).toMatchObject({ pagesFromMemory: pagesRead, pagesFromDatabase: 0 });
      else {
        expect(stats.pagesFromDatabase).toBeGreaterThanOrEqual(3);
        // Read by the replay thread, handed over as bytes; none fell back to the main thread.
        expect(stats.cache).toMatchObject({ threadFailures: 0 });
        expect(stats.cache.threadReads).toBeGreaterThanOrEqual(3);
      }
    } finally {
      restore();
    }
  });

  it('treats ?sinceId= like Last-Event-ID', async () => {
    const t = await start(env);
    const initial = publishMany(t, 700);
    const from = (initial[99] as BusEvent).id;
    const c = await open(t, `sinceId=${from}`);
    await c.until((x) => x.events.length >= 600, 'the replay');
    const live = publishMany(t, 20);
    await c.until((x) => x.events.length >= 620, 'the live events');
    expect(c.events).toEqual([...initial.slice(100), ...live]);
  });

  it('prefers the Last-Event-ID header over ?sinceId= when both are given', async () => {
    const t = await start(env);
    const initial = publishMany(t, 50);
    const c = await open(t, `sinceId=${(initial[4] as BusEvent).id}`, { 'Last-Event-ID': (initial[39] as BusEvent).id });
    const live = publishMany(t, 3);
    await c.until((x) => x.events.at(-1)?.id === (live[2] as BusEvent).id, 'the live events');
    expect(c.events).toEqual([...initial.slice(40), ...live]);
  });

  it('applies the filters to the replay, across replay pages', async () => {
    const t = await start(env);
    const sevs = ['info', 'failure', 'warning', 'success'] as const;
    const make = (i: number): Partial<EventInput> => ({ severity: sevs[i % 4], scope: i % 3 === 0 ? 'b/x' : 'a/x' });
    const initial = publishMany(t, 3000, make);
    const from = (initial[99] as BusEvent).id;
    const query = 'severities=failure&severities=warning&scopePrefix=a/';
    const passes = (e: BusEvent) => (e.severity === 'failure' || e.severity === 'warning') && e.scope.startsWith('a/');
    const replay = initial.slice(100).filter(passes);
    expect(replay.length).toBeGreaterThan(500); // more than one replay page of matching rows

    const c = await open(t, query, { 'Last-Event-ID': from });
    await c.until((x) => x.events.length >= replay.length, 'the filtered replay');
    const live = publishMany(t, 40, make).filter(passes);
    await c.until((x) => x.events.length >= replay.length + live.length, 'the filtered live events');
    expect(c.events).toEqual([...replay, ...live]);
    expect(c.events).toEqual(await allEvents(t.url, query, from));
  });

  it('delivers once an event published as the resuming request arrives (the replay/live boundary)', async () => {
    const t = await start(env);
    const initial = publishMany(t, 10);
    // Published in the same tick as the subscription, before the bus had a turn to flush it.
    const atConnect: BusEvent[] = [];
    const hook = (req: IncomingMessage) => {
      if (req.url?.startsWith('/api/events/stream')) atConnect.push(...publishMany(t, 2, (i) => ({ summary: `at connect ${i}` })));
    };
    t.service.server.prependListener('request', hook);
    try {
      const c = await open(t, '', { 'Last-Event-ID': (initial[9] as BusEvent).id });
      const live = publishMany(t, 2);
      await c.until((x) => x.events.at(-1)?.id === (live[1] as BusEvent).id, 'the live events');
      expect(atConnect).toHaveLength(2);
      expect(c.events).toEqual([...atConnect, ...live]);
    } finally {
      t.service.server.off('request', hook);
    }
  });

  it('leaves no listeners behind on the response after a long replay under back-pressure', async () => {
    // Each replay page that meets back-pressure waits for 'drain' or 'close'; whichever loses
    // must not stay registered for the life of the stream (a resume from far back is hundreds
    // of pages with the default retention).
    const t = await start(env);
    const responses = new Map<string, ServerResponse>();
    const capture = (req: IncomingMessage, res: ServerResponse) => {
      if (req.url?.startsWith('/api/events/stream')) responses.set(req.headers['x-test-name'] as string, res);
    };
    t.service.server.on('request', capture);
    const pad = 'p'.repeat(2048);
    const initial = publishMany(t, 6000, () => ({ payload: { pad } })); // 12 pages of ~1 MB
    await storedOn(t); // stored: the replay reads them

    const live = await open(t, '', { 'x-test-name': 'live' });
    const resumed = await open(t, '', { 'x-test-name': 'resumed', 'Last-Event-ID': '0' });
    await resumed.until((x) => x.events.length >= initial.length, 'the replay');
    const last = publishMany(t, 1)[0] as BusEvent;
    await resumed.until((x) => x.events.at(-1)?.id === last.id, 'a live event after the replay');
    await live.until((x) => x.events.at(-1)?.id === last.id, 'the live event on the live-only stream');
    expect(ids(resumed.events)).toEqual(ids([...initial, last]));

    const baseline = responses.get('live') as ServerResponse;
    const replayed = responses.get('resumed') as ServerResponse;
    expect(replayed.listenerCount('close')).toBe(baseline.listenerCount('close'));
    expect(replayed.listenerCount('error')).toBe(baseline.listenerCount('error'));
    expect(replayed.listenerCount('drain')).toBe(baseline.listenerCount('drain'));
  });

  it('goes straight to live events when Last-Event-ID is the newest id', async () => {
    const t = await start(env);
    const initial = publishMany(t, 10);
    await storedOn(t); // stored: the replay reads them
    const c = await open(t, '', { 'Last-Event-ID': (initial[9] as BusEvent).id });
    const live = publishMany(t, 3);
    await c.until((x) => x.events.length >= 3, 'the live events');
    expect(c.events).toEqual(live);
  });
  if (source === 'memory') {
    it('reads the database up to what memory keeps, then memory: the same events, once, in order', async () => {
      const t = await start({ CONSOLE_SSE_REPLAY_MEMORY_BYTES: '262144' });
      const initial = publishMany(t, 2000, (i) => ({ summary: `mixed ${i}`, severity: i % 3 === 0 ? 'warning' : 'info' }));
      await storedOn(t); // stored: the replay reads them
      const kept = ((await (await t.get('/api/system-status')).json()) as { bus: { replay: { events: number } } }).bus.replay.events;
      // More than one page (500 rows) kept, fewer than all: the first page, from the database,
      // ends inside what memory keeps, and the rest comes from memory.
      expect(kept).toBeGreaterThan(500);
      expect(kept).toBeLessThan(2000 - 100);
      const from = (initial[2000 - kept - 100] as BusEvent).id;
      for (const query of ['', 'severities=warning']) {
        const c = await open(t, query, { 'Last-Event-ID': from });
        const want = await allEvents(t.url, query, from);
        await c.until((x) => x.events.length >= want.length, 'the replay');
        expect(ids(c.events)).toEqual(ids(want));
      }
      const stats = await replayStats(t);
      expect(stats.pagesFromDatabase).toBeGreaterThan(0);
      expect(stats.pagesFromMemory).toBeGreaterThan(0);
    });
  }
  if (source !== 'memory') {
    it('streams resuming from the same point read the database once between them, or once each without the cache', async () => {
      const t = await start(env);
      const shared = source === 'the database';
      const initial = publishMany(t, 3000, (i) => ({ summary: `shared ${i}` }));
      await storedOn(t); // stored: the replay reads them
      const from = (initial[9] as BusEvent).id;
      // Opened one after another: each replays while the others' pages may still be kept.
      const streams: SseClient[] = [];
      for (let i = 0; i < 4; i++) {
        const c = await open(t, '', { 'Last-Event-ID': from });
        await c.until((x) => x.events.length >= 2990, 'the replay');
        streams.push(c);
      }
      for (const c of streams) expect(c.events).toEqual(initial.slice(10));
      const res = await t.get('/api/system-status');
      const cache = ((await res.json()) as { bus: { replay: { cache: { maxBytes: number; blocksRead: number; pagesShared: number; blocks: number; bytes: number } } } }).bus.replay.cache;
      if (shared) {
        // 3,000 events in blocks of 500 ids: the first stream reads each block once (the newest ids, not all
        // delivered, are read for each stream alone); the other three are served from them.
        expect(cache.maxBytes).toBe(8 * 1024 * 1024);
        expect(cache.blocksRead).toBeLessThanOrEqual(Math.ceil(3000 / 500) + 1);
        expect(cache.pagesShared).toBeGreaterThanOrEqual(3 * 5);
        expect(cache.bytes).toBeGreaterThan(0);
      } else expect(cache).toMatchObject({ maxBytes: 0, bytes: 0, blocks: 0, blocksRead: 0, pagesShared: 0 });
    });
  }
});

describe('event stream: slow clients', () => {
  it('drops a client that does not read once its queue passes the bound; others get every event; it can resume', async () => {
    const t = await start({ CONSOLE_SSE_MAX_QUEUE_BYTES: '65536' });
    const normal = await open(t);

    // A client that sends its request and then never reads: the server's unsent bytes grow.
    const slow = net.connect(t.service.port, '127.0.0.1');
    sockets.push(slow);
    await within(new Promise((r) => slow.once('connect', r)), 'the raw connection');
    slow.pause();
    slow.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
    let slowClosed = false;
    slow.once('close', () => (slowClosed = true));
    slow.on('error', () => {}); // a reset is as good as a close here
    await waitFor(async () => ((await busStatus(t)).subscribers === 2 ? true : undefined), 'the raw client subscribed');

    // Large events, in small batches the normal client reads between: it never falls behind
    // by more than a batch (32 KB, under the bound), while the paused client's kernel buffers
    // (a few MB on loopback) fill and then the server-side queue passes 64 KB.
    const summary = 's'.repeat(2048);
    const published: BusEvent[] = [];
    const publishBatch = async () => {
      published.push(...publishMany(t, 16, () => ({ summary })));
      await normal.until((x) => x.events.length === published.length, 'the normal client to catch up');
    };
    while ((await busStatus(t)).slowClientsDropped === 0) {
      for (let i = 0; i < 10; i++) await publishBatch();
      if (published.length > 20_000) throw new Error('the paused client was never dropped');
    }
    await waitFor(async () => ((await busStatus(t)).subscribers === 1 ? true : undefined), 'the subscriber count to drop');
    // The bus keeps going after the drop.
    for (let i = 0; i < 5; i++) await publishBatch();

    const status = await busStatus(t);
    expect(status.slowClientsDropped).toBeGreaterThanOrEqual(1);
    expect(status.subscribers).toBe(1);
    expect(normal.ended).toBe(false);
    expect(normal.events).toEqual(published); // every event, in order, once

    // The dropped connection is closed: reading what the kernel still held ends in EOF/reset.
    let text = '';
    slow.setEncoding('utf8');
    slow.on('data', (s: string) => (text += s));
    slow.resume();
    await waitFor(() => (slowClosed ? true : undefined), 'the dropped connection to close');
    const received = parseFrames(text);
    expect(received.length).toBeLessThan(published.length); // it did not get everything…
    expect(ids(received)).toEqual(ids(published.slice(0, received.length))); // …but a clean prefix

    // Resuming from the last complete frame yields exactly the rest: nothing retention holds is lost.
    const lastSeen = received.at(-1)?.id ?? '0';
    const resumed = await open(t, '', { 'Last-Event-ID': lastSeen });
    await resumed.until((x) => x.events.at(-1)?.id === published.at(-1)?.id, 'the rest of the events');
    expect([...received, ...resumed.events]).toEqual(published);
  });
});

describe('event stream: slow clients during a replay', () => {
  it('keeps a resuming client that stops reading: live events past the bound during its replay are given up and read from the log, in order, memory bounded', async () => {
    const t = await start({ CONSOLE_SSE_MAX_QUEUE_BYTES: '65536' });
    const pad = 'p'.repeat(2048);
    // Far more than loopback buffers hold: the replay blocks, waiting for the reader.
    const initial = publishMany(t, 6000, () => ({ payload: { pad } }));
    await storedOn(t); // stored: the replay reads them

    const slow = net.connect(t.service.port, '127.0.0.1');
    sockets.push(slow);
    await within(new Promise((r) => slow.once('connect', r)), 'the raw connection');
    slow.pause();
    slow.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nLast-Event-ID: 0\r\n\r\n');
    let slowClosed = false;
    slow.once('close', () => (slowClosed = true));
    slow.on('error', () => {});
    await waitFor(async () => ((await busStatus(t)).subscribers === 1 ? true : undefined), 'the raw client subscribed');

    // Live events published meanwhile: 20 MB, three hundred times the bound. Held up to the bound, then given up.
    const live: BusEvent[] = [];
    let queuedMax = 0;
    for (let i = 0; i < 1250; i++) {
      live.push(...publishMany(t, 8, () => ({ payload: { pad } })));
      await tick();
      if (i % 50 === 0) queuedMax = Math.max(queuedMax, (await streamsStatus(t)).queuedBytes);
    }
    // Every live event delivered (held, or given up) while the replay still waits: the event writer thread stores
    // them after their publication, and one delivered after the resume would go to a live client, under the bound's
    // drop rule, not this test's subject.
    await storedOn(t);
    const during = await busStatus(t);
    expect(during).toMatchObject({ subscribers: 1, slowClientsDropped: 0 });
    // Its queue: what the socket holds beside one replay page, and at most the bound of held live frames.
    expect(queuedMax).toBeLessThan(4 * 1048576);

    let text = '';
    slow.setEncoding('utf8');
    slow.on('data', (s: string) => (text += s));
    slow.resume();
    const all = [...initial, ...live];
    await waitFor(() => {
      // A closed client gets nothing more: said at once, not after the wait's ceiling.
      if (slowClosed) throw new Error(`the service closed the client after ${parseFrames(text).length} of ${all.length} events`);
      return parseFrames(text).at(-1)?.id === all.at(-1)?.id ? true : undefined;
    }, 'every event, replayed then live');
    expect(ids(parseFrames(text))).toEqual(ids(all));
    expect(slowClosed).toBe(false);
  });
});

describe('event stream: shutdown', () => {
  it('ends open streams when the service stops', async () => {
    const t = await start();
    const a = await open(t);
    const b = await open(t, 'severities=failure', { 'Last-Event-ID': '0' });
    publishMany(t, 3);
    await a.until((x) => x.events.length === 3, 'three events');
    await t.stop();
    await within(a.done, 'the first stream to end');
    await within(b.done, 'the second stream to end');
    expect(a.ended).toBe(true);
    expect(b.ended).toBe(true);
  });
});

describe('event stream: HEAD', () => {
  it('answers HEAD at once with the stream’s status and headers and no body, and counts no subscriber', async () => {
    const t = await start();
    const live = await open(t); // a real subscriber beside the HEAD requests
    publishMany(t, 3);
    await live.until((x) => x.events.length === 3, 'three events');
    const get = new RawStream(streamUrl(t));
    await get.until((s) => s.startsWith('retry:'), 'the GET stream to begin');
    // Every form of the request a client may send: plain, resuming, filtered, any spelling.
    for (const [target, headers] of [
      ['/api/events/stream', ''],
      ['/api/events/stream?sinceId=0', ''],
      ['/api/events/stream', '\r\nLast-Event-ID: 1'],
      ['/api/events/stream?severities=info&scopePrefix=test', ''],
      ['/API/Events/Stream/', ''],
    ] as const) {
      // With `Connection: close`, the exchange ends only when the service ends the answer; the
      // ceiling guards that it does at all (an endless HEAD answer sends not even its headers).
      const head = await within(rawExchange(t.url, `HEAD ${target} HTTP/1.1\r\nHost: 127.0.0.1${headers}`), `the HEAD answer for ${target}`);
      expect({ target, status: head.status }).toEqual({ target, status: 200 });
      expect(head.headers['content-type']).toBe(get.headers?.get('content-type'));
      expect(head.headers['cache-control']).toBe('no-cache');
      expect(head.headers['x-accel-buffering']).toBe('no');
      expect(head.text).toBe('');
    }
    // Several on one keep-alive connection: each answer ends, so the next one is served.
    for (let i = 0; i < 3; i++) {
      const res = await within(fetch(streamUrl(t), { method: 'HEAD' }), 'a keep-alive HEAD answer');
      expect(res.status).toBe(200);
      expect(await res.text()).toBe('');
    }
    // A bad filter is refused as for GET.
    expect((await fetch(streamUrl(t, 'severities=nope'), { method: 'HEAD' })).status).toBe(422);
    // Only the two streams count.
    expect((await busStatus(t)).subscribers).toBe(2);
    get.close();
    await waitFor(async () => ((await busStatus(t)).subscribers === 1 ? true : undefined), 'the GET stream to leave');
  });
});
