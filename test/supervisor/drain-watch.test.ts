/**
 * The end of a job's output after its exit (src/supervisor/drain-watch.ts): its pipes are read
 * to the end while bytes keep coming, or while the output is busy (held by backpressure, or
 * lines waiting in the framing for their turn), however long; they are given up only after
 * `idleMs` without a byte while nothing waited. (It used to give up a fixed grace after the
 * exit: a service behind a storm destroyed pipes with lines in them.)
 */
import { expect, it } from 'vitest';
import { untilDrained } from '../../src/supervisor/drain-watch.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

it('waits past the idle bound while bytes come, and while the output is busy', async () => {
  let lines = 0;
  let held = false;
  let gaveUp = false;
  let finish!: () => void;
  const drained = new Promise<void>((r) => (finish = r));
  const done = untilDrained(
    drained,
    () => lines,
    () => held,
    200,
    () => (gaveUp = true),
  );
  // Lines for three idle bounds, then held for three more: never given up.
  for (let i = 0; i < 12; i++) {
    lines++;
    await sleep(50);
  }
  held = true;
  await sleep(600);
  expect(gaveUp).toBe(false);
  held = false;
  finish();
  await done;
  expect(gaveUp).toBe(false);
});

it('gives up after the idle bound without a byte while nothing waits, and still waits for the end', async () => {
  let gaveUp = false;
  let finish!: () => void;
  const drained = new Promise<void>((r) => (finish = r));
  let ended = false;
  const done = untilDrained(
    drained,
    () => 7,
    () => false,
    200,
    () => {
      gaveUp = true;
      finish(); // destroying the streams ends them
    },
  ).then(() => (ended = true));
  await sleep(100);
  expect(gaveUp).toBe(false);
  await done;
  expect(gaveUp).toBe(true);
  expect(ended).toBe(true);
});
