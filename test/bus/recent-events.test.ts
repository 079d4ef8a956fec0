/**
 * The replay memory (src/bus/recent-events.ts): what it keeps, what it drops first, where its
 * floor is, pages equal to the database's (filters, bounds, limit), and the frames of the last
 * batch that the fan-out sends.
 */
import { describe, expect, it, vi } from 'vitest';
import { RecentEvents } from '../../src/bus/recent-events.js';
import { packEventFrames, unpackFrames } from '../../src/bus/frames.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { NO_FILTER, type EventFilter, type Severity } from '../../src/bus/event.js';

const row = (id: number, severity: Severity = 'info', scope = 'a/x', bytes = 100): EventRow => ({ id, severity, scope, proposalId: null, data: 'x'.repeat(bytes) });
/** An event as its frame carries it. */
interface Framed {
  id: number;
  data: string;
}
const framed = (r: EventRow): Framed => ({ id: r.id, data: r.data });
const frameOf = (r: EventRow) => `id: ${r.id}\ndata: ${r.data}\n\n`;

/** `framesAfter`, its frames parsed back into events (and checked against its count and last id). */
function framesAfter(m: RecentEvents, sinceId: number, limit: number, filter: EventFilter, upTo: number): Framed[] | null {
  const page = m.framesAfter(sinceId, limit, filter, upTo);
  if (page === null) return null;
  const text = page.frames.toString('utf8');
  const out =
    text === ''
      ? []
      : text
          .slice(0, -2)
          .split('\n\n')
          .map((f) => {
            const m = /^id: (\d+)\ndata: (.*)$/s.exec(f);
            if (!m) throw new Error(`not a frame: ${JSON.stringify(f.slice(0, 80))}`);
            return { id: Number(m[1]), data: m[2] as string };
          });
  expect(page.count).toBe(out.length);
  expect(page.lastId).toBe(out.at(-1)?.id ?? sinceId);
  return out;
}
const ids = (rows: readonly Framed[] | null) => rows?.map((r) => r.id) ?? null;
const ALL = NO_FILTER;
const filter = (f: { severities?: Severity[]; scopePrefix?: string }) => ({ severities: f.severities ?? null, scopePrefix: f.scopePrefix ?? null });

describe('the replay memory', () => {
  it('answers the events after a resume point up to a bound, at most a limit, in order', () => {
    const m = new RecentEvents(1 << 20, 1000, 10);
    m.add([row(11), row(12), row(13)]);
    m.add([row(14), row(15)]);
    expect(m.floor).toBe(10);
    expect(ids(framesAfter(m, 10, 500, ALL, 15))).toEqual([11, 12, 13, 14, 15]);
    expect(ids(framesAfter(m, 12, 500, ALL, 14))).toEqual([13, 14]);
    expect(ids(framesAfter(m, 11, 2, ALL, 99))).toEqual([12, 13]);
    expect(ids(framesAfter(m, 15, 500, ALL, 15))).toEqual([]);
  });

  it('applies the stream filters as the database does', () => {
    const m = new RecentEvents(1 << 20, 1000, 0);
    m.add([row(1, 'info', 'a/x'), row(2, 'warning', 'b/x'), row(3, 'warning', 'a/y'), row(4, 'failure', 'a/x')]);
    expect(ids(framesAfter(m, 0, 500, filter({ severities: ['warning', 'failure'] }), 9))).toEqual([2, 3, 4]);
    expect(ids(framesAfter(m, 0, 500, filter({ scopePrefix: 'a/' }), 9))).toEqual([1, 3, 4]);
    expect(ids(framesAfter(m, 0, 1, filter({ severities: ['warning'], scopePrefix: 'a/' }), 9))).toEqual([3]);
  });

  it('drops the oldest pages past its bytes and past the retention, raising its floor; older resume points are the database’s', () => {
    // 64 KB in pages of 4 KB (a sixteenth), 100-byte events: 40 a page, at most 16 pages.
    const m = new RecentEvents(64 * 1024, 1_000_000, 0);
    m.add(Array.from({ length: 1000 }, (_, i) => row(i + 1)));
    const { events, bytes } = m.stats();
    expect(bytes).toBeLessThanOrEqual(64 * 1024);
    expect(events).toBeGreaterThan(500);
    expect(m.floor).toBe(1000 - events);
    expect(framesAfter(m, m.floor - 1, 5000, ALL, 1000)).toBeNull();
    expect(ids(framesAfter(m, m.floor, 5000, ALL, 1000))).toEqual(Array.from({ length: events }, (_, i) => m.floor + 1 + i));
    expect(m.stats()).toMatchObject({ pagesFromMemory: 1, pagesFromDatabase: 1 });
    // The JSON comes back as it went in.
    expect(framesAfter(m, 999, 1, ALL, 1000)?.[0]).toEqual(framed(row(1000)));

    // The retention bounds the events kept (whole pages go, so fewer may stay).
    const r = new RecentEvents(64 * 1024, 100, 0);
    r.add(Array.from({ length: 1000 }, (_, i) => row(i + 1)));
    expect(r.stats().events).toBeLessThanOrEqual(100);
    expect(r.floor).toBe(1000 - r.stats().events);
  });

  it('keeps an event larger than a page in a page of its own', () => {
    const m = new RecentEvents(64 * 1024, 1000, 0);
    m.add([row(1), row(2, 'info', 'a/x', 10_000), row(3)]);
    expect(framesAfter(m, 0, 10, ALL, 3)).toEqual([row(1), row(2, 'info', 'a/x', 10_000), row(3)].map(framed));
  });

  it('keeps nothing at 0 bytes: every resume point below the newest is the database’s', () => {
    const m = new RecentEvents(0, 1000, 0);
    m.add([row(1), row(2)]);
    expect(m.floor).toBe(2);
    expect(framesAfter(m, 1, 500, ALL, 2)).toBeNull();
    expect(ids(framesAfter(m, 2, 500, ALL, 2))).toEqual([]);
  });

  it('stays correct over many batches: pages filled, dropped, and searched', () => {
    const m = new RecentEvents(64 * 1024, 1_000_000, 0);
    let id = 0;
    for (let batch = 0; batch < 200; batch++) m.add(Array.from({ length: 37 }, () => row(++id, 'info', 'a/x', 50 + (id % 90))));
    const kept = m.stats().events;
    expect(m.floor).toBe(id - kept);
    expect(ids(framesAfter(m, m.floor, 100_000, ALL, id))).toEqual(Array.from({ length: kept }, (_, i) => id - kept + 1 + i));
    expect(ids(framesAfter(m, id - 10, 3, ALL, id))).toEqual([id - 9, id - 8, id - 7]);
    expect(ids(framesAfter(m, id - 10, 100, ALL, id - 5))).toEqual([id - 9, id - 8, id - 7, id - 6, id - 5]);
  });

  it('writes dropped pages again instead of allocating new ones, and answers the new events from them intact', () => {
    // A dropped page left to the collector stays allocated until a full collection (bench/RESULTS.md, P6).
    const alloc = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      const m = new RecentEvents(64 * 1024, 1_000_000, 0);
      let id = 0;
      const made: EventRow[] = [];
      for (let batch = 0; batch < 400; batch++) {
        const rows = Array.from({ length: 37 }, () => row(++id, 'info', `a/${id % 7}`, 50 + (id % 90)));
        made.push(...rows);
        m.add(rows);
      }
      // 14,800 events of ~100 bytes: ~360 pages of 4 KB went through a memory of 16.
      expect(alloc.mock.calls.length).toBeLessThanOrEqual(16 + 1 + 2);
      const kept = m.stats().events;
      expect(framesAfter(m, m.floor, 100_000, ALL, id)).toEqual(made.slice(made.length - kept).map(framed));
    } finally {
      alloc.mockRestore();
    }
  });

  it('keeps pages of many small events (more than its first slots for ids) in order, also when pages are reused', () => {
    // Pages of 4 KB start with slots for 64 events; the frames of 10-byte events (28 bytes) put ~145 in a page.
    const m = new RecentEvents(64 * 1024, 1_000_000, 0);
    const made: EventRow[] = [];
    let id = 0;
    for (let batch = 0; batch < 100; batch++) {
      const rows = Array.from({ length: 250 }, () => row(++id, id % 3 === 0 ? 'warning' : 'info', `s/${id % 5}`, 10));
      made.push(...rows);
      m.add(rows);
    }
    const kept = m.stats().events;
    expect(kept).toBeGreaterThan(2000);
    expect(framesAfter(m, m.floor, 100_000, ALL, id)).toEqual(made.slice(made.length - kept).map(framed));
    expect(ids(framesAfter(m, m.floor, 100_000, filter({ severities: ['warning'], scopePrefix: 's/3' }), id))).toEqual(
      made
        .slice(made.length - kept)
        .filter((r) => r.severity === 'warning' && r.scope === 's/3')
        .map((r) => r.id),
    );
  });

  it('gives the last batch’s frames, every event of it, byte for byte, across pages and for events larger than a page', () => {
    const m = new RecentEvents(64 * 1024, 1_000_000, 0);
    let id = 0;
    for (const [n, bytes] of [
      [3, 100],
      [200, 90],
      [1, 10_000],
      [2, 5000],
      [60, 1],
    ] as const) {
      // Non-ASCII too: the frames are UTF-8.
      const batch = Array.from({ length: n }, () => ({ ...row(++id), data: `{"é":"${'x'.repeat(bytes)}→${id}"}` }));
      m.add(batch);
      expect(m.lastFrames()?.toString('utf8')).toBe(batch.map(frameOf).join(''));
    }
    // Ids of every length, up to the largest safe integer.
    const big = [10 ** 15 - 1, 10 ** 15, Number.MAX_SAFE_INTEGER].map((n) => row(n));
    m.add(big);
    expect(m.lastFrames()?.toString('utf8')).toBe(big.map(frameOf).join(''));
    expect(framesAfter(m, 10 ** 15 - 1, 10, ALL, Number.MAX_SAFE_INTEGER)).toEqual(big.slice(1).map(framed));
    m.add([]);
    expect(m.lastFrames()?.length).toBe(0);
  });

  it('keeps frames made elsewhere (the event writer thread’s) byte for byte as the ones it writes itself: pages, drops, filters, the last batch', () => {
    // One fed rows, one fed the same rows with their frames packed as the writer thread packs them.
    const mine = new RecentEvents(64 * 1024, 1_000_000, 0);
    const given = new RecentEvents(64 * 1024, 1_000_000, 0);
    const sev: Severity[] = ['info', 'warning', 'failure'];
    const shared = new SharedArrayBuffer(64 * 1024);
    let inShared = 0;
    let id = 0;
    for (const [n, bytes] of [
      [3, 100],
      [200, 90],
      [1, 10_000],
      [2, 5000],
      [60, 1],
      [700, 50],
      [1, 70_000],
      [5, 20],
      [0, 0],
    ] as const) {
      // Non-ASCII too (the frames are UTF-8), and events of several scopes and severities for the filters.
      const batch = Array.from({ length: n }, () => {
        const r = row(++id, sev[id % 3] as Severity, id % 2 === 0 ? 'a/x' : 'b/y');
        return { ...r, data: `{"é":"${'x'.repeat(bytes)}→${id}"}` };
      });
      mine.add(batch);
      // Small batches' frames in the shared buffer (as the writer thread puts them), larger ones in their own.
      const packed = packEventFrames(
        Float64Array.from(batch.map((r) => r.id)),
        batch.map((r) => r.data),
        shared,
      );
      if (packed === null) inShared++;
      given.add(batch, unpackFrames(packed ?? shared));
      expect(given.lastFrames()?.toString('utf8')).toBe(batch.map(frameOf).join(''));
      expect(given.lastFrameEnds()).toEqual(mine.lastFrameEnds());
      // Its pages fill to the byte (its own writes leave room for the longest id), so it may keep a few more.
      expect(given.stats().bytes).toBeLessThanOrEqual(64 * 1024 + 70_100);
      expect(given.floor).toBeLessThanOrEqual(mine.floor);
      for (const f of [ALL, filter({ severities: ['warning'] }), filter({ scopePrefix: 'a/' })]) {
        for (const since of [mine.floor, Math.max(mine.floor, id - 50), id - 1]) {
          expect(framesAfter(given, since, 500, f, id)).toEqual(framesAfter(mine, since, 500, f, id));
        }
      }
    }
    // Both ways were taken: in the shared buffer, and in one of their own (the batches too large for it).
    expect(inShared).toBeGreaterThan(0);
    expect(inShared).toBeLessThan(9);
  });

  it('gives no frames of its own at 0 bytes (the fan-out frames the batch itself)', () => {
    const m = new RecentEvents(0, 1000, 0);
    m.add([row(1)]);
    expect(m.lastFrames()).toBeNull();
  });
});
