/**
 * The pool's task deadlines (src/workers/task-deadlines.ts): one timer for all, a task past its
 * deadline aborted (never before it) with a `TimeoutError`, a finished one never, and the
 * signal in the shape Piscina takes. The pool's own timeouts, through the service, are in
 * test/engine/store-reads-process.test.ts.
 */
import { Piscina } from 'piscina';
import { describe, expect, it } from 'vitest';
import { fixture } from '../helpers/service.js';
import { TaskDeadlines } from '../../src/workers/task-deadlines.js';

const waitFor = async (cond: () => boolean) => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
};

describe('task deadlines', () => {
  it('abort a task past its deadline, not before, once, with a TimeoutError', async () => {
    const deadlines = new TaskDeadlines(20);
    const d = deadlines.start();
    const seen: number[] = [];
    d.addEventListener('abort', () => seen.push(performance.now()));
    expect(d.aborted).toBe(false);
    await waitFor(() => d.aborted);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toBeGreaterThanOrEqual(d.at);
    expect(d.reason).toBeInstanceOf(DOMException);
    expect((d.reason as DOMException).name).toBe('TimeoutError');
    expect(deadlines.size).toBe(0);
  });

  it('never abort a task that is done, nor call a listener removed', async () => {
    const deadlines = new TaskDeadlines(15);
    const finished = deadlines.start();
    const unheard = deadlines.start();
    const late = deadlines.start();
    let calls = 0;
    finished.addEventListener('abort', () => calls++);
    const listener = () => calls++;
    unheard.addEventListener('abort', listener);
    unheard.removeEventListener('abort', listener);
    finished.done();
    expect(deadlines.size).toBe(2);
    await waitFor(() => late.aborted);
    expect([finished.aborted, unheard.aborted, late.aborted, calls]).toEqual([false, true, true, 0]);
    expect(deadlines.size).toBe(0);
  });

  it('abort the ones past their deadline in the order they started, and keep waiting for the others', async () => {
    const deadlines = new TaskDeadlines(25);
    const order: number[] = [];
    const first = [0, 1, 2].map((n) => {
      const d = deadlines.start();
      d.addEventListener('abort', () => order.push(n));
      return d;
    });
    await new Promise((r) => setTimeout(r, 10));
    const second = deadlines.start();
    second.addEventListener('abort', () => order.push(3));
    await waitFor(() => first.every((d) => d.aborted));
    expect(order.slice(0, 3)).toEqual([0, 1, 2]);
    await waitFor(() => second.aborted);
    expect(order).toEqual([0, 1, 2, 3]);
    expect(performance.now()).toBeGreaterThanOrEqual(second.at);
  });

  it('abort a Piscina task through its signal', async () => {
    // A file that stays: the thread Piscina starts to replace the aborted one may load it after the pool is destroyed.
    const pool = new Piscina({ filename: fixture('never-settles.mjs'), maxThreads: 1 });
    try {
      const deadline = new TaskDeadlines(30).start();
      await expect(pool.run({}, { signal: deadline })).rejects.toMatchObject({ name: 'AbortError' });
      expect(deadline.aborted).toBe(true);
    } finally {
      await pool.destroy();
    }
  });
});
