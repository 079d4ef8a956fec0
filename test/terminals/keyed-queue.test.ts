/**
 * The per-key queue of terminals' starts and stops and of their records' writes
 * (src/terminals/keyed-queue.ts): one key's tasks one after the other, a rejected task not
 * stopping the next, other keys side by side, an idle key forgotten.
 */
import { expect, it } from 'vitest';
import { KeyedQueue } from '../../src/terminals/keyed-queue.js';

/** A promise and its resolver. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

it('runs one key’s tasks one after the other, a rejection included, and other keys side by side', async () => {
  const q = new KeyedQueue();
  const order: string[] = [];
  const first = gate();
  const a1 = q.run('a', async () => {
    order.push('a1 start');
    await first.promise;
    order.push('a1 end');
    throw new Error('a1 failed');
  });
  const a2 = q.run('a', async () => {
    order.push('a2');
    return 2;
  });
  const b1 = q.run('b', async () => {
    order.push('b1');
    return 'b';
  });
  // b runs while a1 waits; a2 waits for a1.
  expect(await b1).toBe('b');
  expect(order).toEqual(['a1 start', 'b1']);
  first.open();
  await expect(a1).rejects.toThrow('a1 failed');
  expect(await a2).toBe(2);
  expect(order).toEqual(['a1 start', 'b1', 'a1 end', 'a2']);
  await q.settled('a');
  // Forgotten once idle (the tail's clean-up runs a turn later).
  await new Promise((r) => setImmediate(r));
  expect(q.size).toBe(0);
});

it('settles a key’s wait without rejecting, also when its last task failed or none was queued', async () => {
  const q = new KeyedQueue();
  await expect(q.settled('none')).resolves.toBeUndefined();
  q.run('x', async () => {
    throw new Error('no');
  }).catch(() => undefined);
  await expect(q.settled('x')).resolves.toBeUndefined();
});
