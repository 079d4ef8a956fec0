/** The memory figures of the system status and the history: the same as `process.memoryUsage()` gives, read cheaply. */
import { describe, expect, it } from 'vitest';
import { mainMemory } from '../../src/ops/memory.js';

describe('mainMemory', () => {
  it('gives the RSS and the heap in use as process.memoryUsage() does', () => {
    const before = process.memoryUsage();
    const m = mainMemory();
    const after = process.memoryUsage();
    // Both figures move between the reads: each lies within what the reads around it saw, with a margin.
    const within = (x: number, a: number, b: number) => x >= Math.min(a, b) * 0.9 && x <= Math.max(a, b) * 1.1;
    expect(within(m.rss, before.rss, after.rss), `rss ${m.rss} against ${before.rss}, ${after.rss}`).toBe(true);
    expect(within(m.heapUsed, before.heapUsed, after.heapUsed), `heapUsed ${m.heapUsed} against ${before.heapUsed}, ${after.heapUsed}`).toBe(true);
    expect(m.heapUsed).toBeLessThan(m.rss);
  });
});
