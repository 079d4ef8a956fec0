/**
 * One stream's hand-over from its replay to live frames (src/bus/sse-client.ts), on a real Writable whose
 * reader the test drives: which bytes the socket still holds is then exact, not a guess of a loopback's buffers.
 * The stream over HTTP is test/http/stream.test.ts.
 */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { NO_FILTER } from '../../src/bus/event.js';
import { frameOf } from '../../src/bus/frames.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { RecentEvents } from '../../src/bus/recent-events.js';
import { ReplayCache } from '../../src/bus/replay-cache.js';
import { SseClient, type SseOptions, Turns } from '../../src/bus/sse-client.js';

const MAX_QUEUE = 65_536;
const OPTIONS: SseOptions = {
  heartbeatMs: 60_000,
  maxQueueBytes: MAX_QUEUE,
  retryMs: 1000,
  replayMemoryBytes: 64 * 1048576,
  replayCacheBytes: 0,
  replayThreadNice: 0,
  totalQueueBytes: 1 << 30,
  maxStreams: 10,
  maxStreamsPerAddress: 0,
  maxDatabaseReplays: 1,
};

const row = (id: number): EventRow => ({ id, severity: 'info', scope: 'test/x', proposalId: null, data: JSON.stringify({ id: String(id), pad: 'p'.repeat(2000) }) });

/**
 * A response whose reader the test drives: every chunk stays queued (counted in `writableLength`) until
 * {@link read} takes it. What it was given, in order, is `text`.
 */
class HeldResponse extends Writable {
  text = '';
  private readonly waiting: (() => void)[] = [];
  readonly socket = { setNoDelay: () => {} };
  constructor() {
    super({ highWaterMark: 16_384, decodeStrings: true });
  }
  override _write(chunk: Buffer, _enc: BufferEncoding, done: (err?: Error | null) => void): void {
    this.text += chunk.toString('utf8');
    this.waiting.push(() => done());
  }
  writeHead(): this {
    return this;
  }
  /** Takes every chunk queued now and those written while it drains (the reader keeps up). */
  async read(): Promise<void> {
    while (this.waiting.length > 0) {
      (this.waiting.shift() as () => void)();
      await new Promise((r) => setImmediate(r));
    }
  }
}

const turnOf = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('a stream’s replay handing over to live frames', () => {
  it('keeps a client whose held live frames, added to the last replay page still queued, pass the bound: they are given up and replayed, in order', async () => {
    // 503 stored events: the replay's pages are 500 (past the high-water mark: it waits for a drain) and 3.
    const recent = new RecentEvents(OPTIONS.replayMemoryBytes, 100_000, 0);
    const stored = Array.from({ length: 503 }, (_, i) => row(i + 1));
    recent.add(stored);
    const res = new HeldResponse();
    let closedAs: string | null = null;
    const fromLog = new ReplayCache(
      0,
      () => [],
      () => 503,
    );
    const client = new SseClient(
      res as never,
      fromLog,
      recent,
      new Turns(1),
      NO_FILTER,
      OPTIONS,
      (why) => (closedAs = why),
      () => {},
    );
    client.start(0, 503);
    await turnOf(5); // the first page is written; the replay waits for the reader

    // Live events while it waits: held, just under the bound.
    const live = Array.from({ length: 30 }, (_, i) => row(504 + i));
    const bytes = live.reduce((n, r) => n + Buffer.byteLength(frameOf(r)), 0);
    expect(bytes).toBeLessThan(MAX_QUEUE);
    expect(bytes + 3 * 2000).toBeGreaterThan(MAX_QUEUE);
    // As the hub does: kept for replays first, then handed to the client.
    recent.add(live);
    client.receive([Buffer.from(live.map(frameOf).join(''), 'utf8')], live);

    // The reader takes the first page; the last page (3 events) is written and stays queued, under the
    // high-water mark, so the replay does not wait. Handing the held frames over now would put the queue past the bound.
    const first = res.text.length;
    await res.read();
    expect(res.text.length).toBeGreaterThan(first);
    await turnOf(5);
    expect(closedAs).toBe(null);
    await res.read();
    await turnOf(5);
    await res.read();

    expect(closedAs).toBe(null);
    const got = [...res.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(got).toEqual([...stored, ...live].map((r) => r.id));
  });

  it('goes live at once when nothing is held, even with more queued than the bound: nothing to give up, no page read again', async () => {
    // A bound below the socket's high-water mark: the last page (5 events, about 10 KB) stays queued past it.
    const options = { ...OPTIONS, maxQueueBytes: 8192 };
    const recent = new RecentEvents(options.replayMemoryBytes, 100_000, 0);
    const stored = Array.from({ length: 505 }, (_, i) => row(i + 1));
    recent.add(stored);
    const res = new HeldResponse();
    let closedAs: string | null = null;
    const client = new SseClient(
      res as never,
      new ReplayCache(
        0,
        () => [],
        () => 505,
      ),
      recent,
      new Turns(1),
      NO_FILTER,
      options,
      (why) => (closedAs = why),
      () => {},
    );
    client.start(0, 505);
    await turnOf(5);
    await res.read();
    // Many turns with the last page queued: the replay has ended, it does not read again and again meanwhile.
    await turnOf(50);
    expect(recent.stats().pagesFromMemory).toBe(2);
    await res.read();
    expect(closedAs).toBe(null);
    const got = [...res.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    expect(got).toEqual(stored.map((r) => r.id));
  });
});
