/**
 * The answer cache (src/engine/answer-cache.ts): bounded in bytes by
 * CONSOLE_CACHE_MAX_BYTES through lru-cache, least recently used entries evicted first, an
 * answer larger than the whole bound never kept.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
const MAX = 700;
let t: TestService;

interface CacheStats {
  entries: number;
  bytes: number;
  maxBytes: number;
  hits: number;
  misses: number;
}

const cache = async (): Promise<CacheStats> => ((await (await t.get('/api/system-status')).json()) as { cache: CacheStats }).cache;
const read = async (p: string): Promise<number> => {
  const r = await t.get(p);
  expect(r.status, p).toBe(200);
  return (await r.arrayBuffer()).byteLength;
};

beforeAll(async () => {
  t = await startTestService({ env: { CONSOLE_CACHE_MAX_BYTES: String(MAX) } });
});
afterAll(() => t.close());

it('keeps the cached bytes within CONSOLE_CACHE_MAX_BYTES, evicting the least recently used', async () => {
  const beats = ['b01', 'b02', 'b03', 'b04', 'b05', 'b06'];
  let total = 0;
  for (const b of beats) total += await read(`/api/beats/${b}/takes?projectId=${P}`);
  expect(total, 'the answers together exceed the bound').toBeGreaterThan(MAX);
  const s = await cache();
  expect(s.maxBytes).toBe(MAX);
  expect(s.bytes).toBeGreaterThan(0);
  expect(s.bytes).toBeLessThanOrEqual(MAX);
  expect(s.entries).toBeLessThan(beats.length);

  // The newest answer is still there (a hit); the oldest was evicted (a miss).
  const before = await cache();
  await read(`/api/beats/b06/takes?projectId=${P}`);
  const afterNewest = await cache();
  expect(afterNewest.hits - before.hits).toBe(1);
  expect(afterNewest.misses - before.misses).toBe(0);
  await read(`/api/beats/b01/takes?projectId=${P}`);
  const afterOldest = await cache();
  expect(afterOldest.misses - afterNewest.misses).toBe(1);
});

it('never keeps an answer larger than the bound', async () => {
  const lineage = `/api/beats/b01/lineage?projectId=${P}`;
  expect(await read(lineage)).toBeGreaterThan(MAX);
  const before = await cache();
  await read(lineage);
  await read(lineage);
  const after = await cache();
  // Not kept: each read synthesises it again.
  expect(after.misses - before.misses).toBe(2);
  expect(after.hits - before.hits).toBe(0);
  expect(after.bytes).toBeLessThanOrEqual(MAX);
});
