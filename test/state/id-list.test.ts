/**
 * The id lists of the event log's pairs (src/state/sqlite/event-pairs.ts): ascending ids in
 * fixed chunks, read by index and searched across chunk boundaries as a plain array would be.
 */
import v8 from 'node:v8';
import { expect, it } from 'vitest';
import { IdList } from '../../src/state/sqlite/event-pairs.js';

/** The index of the first element above `id`, by a scan. */
const firstAboveByScan = (ids: readonly number[], id: number) => {
  const i = ids.findIndex((x) => x > id);
  return i === -1 ? ids.length : i;
};

it('holds ids across chunks: length, each id by index, and the first above any id', () => {
  const list = new IdList();
  const plain: number[] = [];
  expect(list.length).toBe(0);
  expect(list.firstAbove(5)).toBe(0);
  // Gaps of 1 to 3, past several 4,096-id chunks, ids beyond 32 bits at the end.
  let id = 0;
  for (let i = 0; i < 13_000; i++) {
    id += 1 + (i % 3);
    if (i === 12_990) id = 2 ** 40;
    list.push(id);
    plain.push(id);
  }
  expect(list.length).toBe(plain.length);
  for (let i = 0; i < plain.length; i++) if (list.at(i) !== plain[i]) expect(list.at(i), `at ${i}`).toBe(plain[i]);
  const probes = [-1, 0, 1, 2, 2 ** 40, 2 ** 40 + 100, ...[4095, 4096, 4097, 8191, 8192, 12_288].flatMap((i) => [plain[i]! - 1, plain[i]!, plain[i]! + 1])];
  for (const p of probes) expect(list.firstAbove(p), `first above ${p}`).toBe(firstAboveByScan(plain, p));
});

it('grows without large objects on the JS heap (a growing array leaves one per growth past 128 KiB)', () => {
  const largeObjects = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'large_object_space')!.space_used_size;
  const list = new IdList();
  const before = largeObjects();
  for (let i = 1; i <= 200_000; i++) list.push(i);
  const grown = largeObjects() - before;
  expect(list.at(199_999)).toBe(200_000);
  // The chunks are typed arrays (their bytes off the heap); a plain array of as many ids grows
  // past 128 KiB eleven times here, each a large object.
  expect(grown).toBeLessThan(128 * 1024);
});

it('holds a few ids in little room: 10,000 pairs of one id take 16 ids of room each, not a chunk', () => {
  const lists = Array.from({ length: 10_000 }, (_, i) => {
    const l = new IdList();
    l.push(i + 1);
    return l;
  });
  expect(lists.reduce((sum, l) => sum + l.capacity, 0)).toBe(10_000 * 16);
  const one = new IdList();
  for (let i = 1; i <= 100; i++) one.push(i);
  expect(one.capacity).toBe(128);
  for (let i = 101; i <= 5000; i++) one.push(i);
  // The first chunk stops at 4,096 ids; the next is whole.
  expect(one.capacity).toBe(8192);
  expect([one.at(0), one.at(4095), one.at(4096), one.at(4999)]).toEqual([1, 4096, 4097, 5000]);
});
