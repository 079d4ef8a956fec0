/**
 * Database replay pages shared between streams (src/bus/replay-cache.ts): every page equals a direct read of the
 * log, whatever the resume point, page size, bound, gaps in the ids and what is delivered yet; streams replaying
 * the same stretch read it once; nothing past the delivered id is kept; memory stays within the bound.
 */
import { describe, expect, it } from 'vitest';
import { NO_FILTER, type EventFilter } from '../../src/bus/event.js';
import { BLOCK_IDS, ReplayCache } from '../../src/bus/replay-cache.js';

/** A log as the bus reads it: the stored events' ids (ascending) and their frames, counting the reads. */
function log(ids: number[]) {
  const data = (id: number) => JSON.stringify({ id: String(id), detail: id % 3 === 0 ? 'é ✓' : 'x'.repeat(id % 40) });
  const frame = (id: number) => `id: ${id}\ndata: ${data(id)}\n\n`;
  const state = { ids, reads: 0, async: false };
  const read = (sinceId: number, limit: number, _f: EventFilter, upTo: number) => {
    state.reads++;
    const out = state.ids
      .filter((id) => id > sinceId && id <= upTo)
      .slice(0, limit)
      .map(frame);
    return state.async ? new Promise<string[]>((r) => setImmediate(() => r(out))) : out;
  };
  const direct = (sinceId: number, limit: number, upTo: number) => {
    const want = state.ids.filter((id) => id > sinceId && id <= upTo).slice(0, limit);
    return { frames: want.map(frame).join(''), count: want.length, lastId: want.at(-1) ?? sinceId };
  };
  return { state, read, direct };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const text = (p: { frames: Buffer | string; count: number; lastId: number }) => ({ frames: p.frames.toString(), count: p.count, lastId: p.lastId });

describe('replay cache', () => {
  it('answers every page exactly as a direct read: resume points, page sizes, bounds, gaps in the ids', async () => {
    // Ids with gaps: one inside a block, one over whole blocks (ids reserved before a restart), a sparse stretch.
    const ids = [...range(1, 1234), ...range(1300, 2600), ...range(4100, 4420), ...range(4421, 6000).filter((id) => id % 7 === 0)];
    const { read, direct } = log(ids);
    const cache = new ReplayCache(64 * 1024 * 1024, read, () => 6000);
    const points = [0, 1, 499, 500, 501, 777, 1234, 1250, 1299, 2600, 3000, 4099, 4100, 5999, 6000];
    for (const since of points) {
      for (const limit of [1, 7, 500, 1000]) {
        for (const upTo of [500, 1300, 2599, 4200, 6000]) {
          if (upTo <= since) continue;
          expect(text(await cache.framesAfter(since, limit, NO_FILTER, upTo)), JSON.stringify({ since, limit, upTo })).toEqual(direct(since, limit, upTo));
        }
      }
    }
  });

  it('reads a stretch once for all the streams replaying it, and reads the rest for each stream', async () => {
    const { state, read, direct } = log(range(1, 5000));
    const cache = new ReplayCache(64 * 1024 * 1024, read, () => 5000);
    // Ten streams page through the same stretch from different points, interleaved, as the hub's replays do.
    const cursors = Array.from({ length: 10 }, (_, i) => i * 37);
    let pages = 0;
    while (cursors.some((c) => c < 5000)) {
      for (const [i, c] of cursors.entries()) {
        if (c >= 5000) continue;
        const page = await cache.framesAfter(c, 500, NO_FILTER, 5000);
        expect(text(page)).toEqual(direct(c, 500, 5000));
        cursors[i] = page.count < 500 ? 5000 : page.lastId;
        pages++;
      }
    }
    expect(state.reads).toBe(5000 / BLOCK_IDS);
    expect(cache.stats()).toMatchObject({ blocksRead: 10, blocks: 10 });
    expect(cache.stats().pagesShared).toBeGreaterThan(pages / 2);
    // A filtered replay reads for its stream alone, each time.
    const before = state.reads;
    await cache.framesAfter(0, 500, { severities: ['failure'], scopePrefix: null }, 5000);
    await cache.framesAfter(0, 500, { severities: null, scopePrefix: null, proposalId: 'gen_aaaaaaaaaaaa' }, 5000);
    expect(state.reads).toBe(before + 2);
  });

  it('keeps nothing past the newest delivered id: a block still filling is read again once complete', async () => {
    const l = log(range(1, 700));
    let delivered = 700;
    const cache = new ReplayCache(64 * 1024 * 1024, l.read, () => delivered);
    expect(text(await cache.framesAfter(0, 1000, NO_FILTER, 700))).toEqual(l.direct(0, 1000, 700));
    expect(cache.stats().blocks).toBe(1); // ids 1–500; 501–700 read for the stream alone
    l.state.ids = range(1, 1200);
    delivered = 1200;
    expect(text(await cache.framesAfter(600, 1000, NO_FILTER, 1200))).toEqual(l.direct(600, 1000, 1200));
    expect(text(await cache.framesAfter(0, 1000, NO_FILTER, 1200))).toEqual(l.direct(0, 1000, 1200));
    expect(cache.stats().blocks).toBe(2);
  });

  it('stays within its bound, dropping the least recently used blocks', async () => {
    const { read, direct } = log(range(1, 20_000));
    const cache = new ReplayCache(100_000, read, () => 20_000);
    for (let c = 0; c < 20_000; c += 500) {
      expect(text(await cache.framesAfter(c, 500, NO_FILTER, 20_000))).toEqual(direct(c, 500, 20_000));
      expect(cache.stats().bytes).toBeLessThanOrEqual(100_000);
    }
    expect(cache.stats().blocks).toBeLessThan(40);
    expect(cache.stats().blocks).toBeGreaterThan(0);
    // Bound 0: nothing kept, every page read for its stream.
    const none = new ReplayCache(0, read, () => 20_000);
    expect(text(await none.framesAfter(250, 500, NO_FILTER, 20_000))).toEqual(direct(250, 500, 20_000));
    expect(none.stats()).toMatchObject({ blocks: 0, bytes: 0, blocksRead: 0 });
  });

  it('shares one asynchronous read (cluster mode) between streams asking for the same block at once', async () => {
    const l = log(range(1, 2000));
    l.state.async = true;
    const cache = new ReplayCache(64 * 1024 * 1024, l.read, () => 2000);
    const pages = await Promise.all(Array.from({ length: 8 }, (_, i) => cache.framesAfter(i * 10, 300, NO_FILTER, 2000)));
    for (const [i, p] of pages.entries()) expect(text(p)).toEqual(l.direct(i * 10, 300, 2000));
    expect(l.state.reads).toBe(1);
  });
});
