/**
 * The answer watchdog (src/process/answer-watchdog.ts): a limit counted in ticks of at most a second, from the second
 * tick of what is awaited; a new question starts the count again. (Its owners, with real threads and a pause of the
 * process: test/state/event-writer-thread.test.ts, test/supervisor/job-io.test.ts.)
 */
import { expect, it } from 'vitest';
import { ANSWER_LIMIT_MS, AnswerWatchdog } from '../../src/process/answer-watchdog.js';

it('ticks at most once a second, and says hung once the limit passed in ticks for the same question', () => {
  const dog = new AnswerWatchdog(3000);
  expect(dog.tickMs).toBe(1000);
  // The first tick may come right after the question: three ticks are not yet past 3 s, the fourth is.
  expect([dog.tick(7), dog.tick(7), dog.tick(7), dog.tick(7)]).toEqual([false, false, false, true]);
  expect(dog.hung('job I/O').message).toBe('the job I/O thread did not answer within 3000 ms');
});

it('starts the count again for each new question', () => {
  const dog = new AnswerWatchdog(2000);
  expect([dog.tick(1), dog.tick(1), dog.tick(2), dog.tick(2), dog.tick(3)]).toEqual([false, false, false, false, false]);
  expect([dog.tick(3), dog.tick(3)]).toEqual([false, true]);
});

it('ticks as often as a limit under a second: hung on the second tick', () => {
  const dog = new AnswerWatchdog(100);
  expect(dog.tickMs).toBe(100);
  expect([dog.tick(1), dog.tick(1)]).toEqual([false, true]);
});

it('gives the service a minute by default', () => {
  expect(ANSWER_LIMIT_MS).toBe(60_000);
  expect(new AnswerWatchdog().limitMs).toBe(60_000);
});
