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
