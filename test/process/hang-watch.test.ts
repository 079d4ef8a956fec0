/**
 * The deadlines of a one-thread pool's tasks (src/process/hang-watch.ts), alone: the oldest task under way is
 * aborted past the limit with the thread's hang error and reported once; the tasks behind it count from when they
 * become the oldest; a task answered is never aborted. No timing is asserted.
 */
import { describe, expect, it } from 'vitest';
import { HangWatch } from '../../src/process/hang-watch.js';

/** A task that settles only when aborted (then rejects with the reason), or when `answer` is called. */
function pending(): { task: (signal: AbortSignal) => Promise<string>; answer: (v: string) => void } {
  let answer!: (v: string) => void;
  return {
    answer: (v) => answer(v),
    task: (signal) =>
      new Promise<string>((resolve, reject) => {
        answer = resolve;
        signal.addEventListener('abort', () => reject(signal.reason as Error));
      }),
  };
}

describe('task deadlines', () => {
  it('aborts the oldest task past the limit with the hang error, once; the one behind it is answered, not aborted', async () => {
    const hangs: Error[] = [];
    const deadlines = new HangWatch('test', (err) => hangs.push(err), 100);
    const first = pending();
    const second = pending();
    const stuck = deadlines.run(first.task);
    const behind = deadlines.run(second.task);
    await expect(stuck).rejects.toThrow(/^the test thread did not answer within 100 ms$/);
    // Answered after the first was aborted (as the replacement thread would): its own count had just started.
    second.answer('done');
    expect(await behind).toBe('done');
    expect(hangs.map((e) => e.message)).toEqual(['the test thread did not answer within 100 ms']);
  });

  it('leaves a task answered at once alone, and its result and error pass through', async () => {
    const deadlines = new HangWatch('test', () => expect.unreachable('no hang'), 100);
    expect(await deadlines.run(async () => 42)).toBe(42);
    await expect(deadlines.run(async () => Promise.reject(new Error('its own')))).rejects.toThrow('its own');
  });
});
