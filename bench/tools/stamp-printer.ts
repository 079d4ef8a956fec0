/**
 * The dispatch tool of P7 (a generation storm): accepts the real tool's flags, prints
 * timestamped lines on stdout for `BENCH_DURATION_MS` ms, then exits 0. Each line is
 * `line <n> <t> <padding>`, where `t` is the wall-clock time of the write in ms
 * (`performance.timeOrigin + performance.now()`, comparable across processes: process.hrtime
 * is not), so a stream client can compute each line's delivery lag on arrival.
 *
 * - `BENCH_RATE` unset or 0: as fast as it can. A write that the pipe does not take at once
 *   (`write()` returns false) is followed by a wait for `drain`, as a well-behaved tool does:
 *   when the service stops reading the pipe, this tool stops writing.
 * - `BENCH_RATE` = lines/s: lines are due at that rate from the start; every tick writes the
 *   lines due so far (each stamped when written). A tool held back by a full pipe writes its
 *   backlog once the pipe drains, so `lines written / asked` shows whether it was slowed.
 *
 * BENCH_NICE=<n>: see below (an experiment of the notes, not used by the rows).
 *
 * At exit it writes `{job, lines, ms, askedRate, drainWaits, drainWaitMs}` to
 * `$BENCH_STATS_DIR/<job id>.json` (the job id is CONSOLE_JOB_ID, set by the supervisor):
 * `drainWaitMs` is how long the tool waited for the pipe, i.e. how much the service slowed it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { wallAt } from '../lib/wall-clock.js';

// BENCH_NICE=<n> (an experiment, not the row): the tool lowers its own CPU priority first, as
// the supervisor could do for every job at spawn, to see what the console would gain.
if (process.env.BENCH_NICE) os.setPriority(Number(process.env.BENCH_NICE));

const durationMs = Number(process.env.BENCH_DURATION_MS ?? 5000);
const rate = Number(process.env.BENCH_RATE ?? 0);
const statsDir = process.env.BENCH_STATS_DIR;
const job = process.env.CONSOLE_JOB_ID ?? `pid${process.pid}`;
const pad = 'abcdefghijklmnopqrstuvwxyz0123';
/** Lines per write at full speed: small enough that a line's stamp is close to its write. */
const CHUNK = 64;
/** Fixed-rate tick: lines due are written every TICK_MS. */
const TICK_MS = 5;

const origin = wallAt(0); // not performance.timeOrigin: see bench/lib/wall-clock
const t0 = performance.now();
let n = 0;
let drainWaits = 0;
let drainWaitMs = 0;

function lines(count: number): string {
  let text = '';
  const stamp = (origin + performance.now()).toFixed(3);
  for (let k = 0; k < count; k++) text += `line ${++n} ${stamp} ${pad}\n`;
  return text;
}

/** Writes `text`; resolves at once, or on `drain` when the pipe did not take it all. */
function write(text: string): Promise<void> | null {
  if (process.stdout.write(text)) return null;
  drainWaits++;
  const w0 = performance.now();
  return new Promise((resolve) =>
    process.stdout.once('drain', () => {
      drainWaitMs += performance.now() - w0;
      resolve();
    }),
  );
}

async function fullSpeed(): Promise<void> {
  while (performance.now() - t0 < durationMs) {
    const wait = write(lines(CHUNK));
    // Yield now and then even when the pipe keeps up, so timers and 'drain' can run.
    if (wait) await wait;
    else if (n % (CHUNK * 16) === 0) await new Promise((r) => setImmediate(r));
  }
}

async function fixedRate(): Promise<void> {
  const total = Math.round((rate * durationMs) / 1000);
  while (n < total) {
    const due = Math.min(total, Math.floor((rate * (performance.now() - t0)) / 1000));
    if (due > n) {
      const wait = write(lines(due - n));
      if (wait) await wait;
    }
    if (n < total) await new Promise((r) => setTimeout(r, TICK_MS));
  }
}

await (rate > 0 ? fixedRate() : fullSpeed());
const ms = performance.now() - t0;
if (statsDir) {
  fs.writeFileSync(path.join(statsDir, `${job}.json`), JSON.stringify({ job, lines: n, ms, askedRate: rate, drainWaits, drainWaitMs }));
}
// No process.exit: the last writes still queued for the pipe are flushed before the exit.
