/**
 * Preloaded into the service by the benchmarks (`node --import …/loop-monitor.js`): measures
 * event-loop delay with perf_hooks.monitorEventLoopDelay at 1 ms resolution. SIGUSR2 starts a
 * window (resets the histogram); the next SIGUSR2 writes {p50, p99, max, count} in ms to the
 * file named by BENCH_LOOP_FILE. No benchmark code is part of the service itself.
 */
import fs from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const h = monitorEventLoopDelay({ resolution: 1 });
h.enable();
let open = false;
process.on('SIGUSR2', () => {
  if (!open) {
    h.reset();
    open = true;
    return;
  }
  open = false;
  const ms = (ns: number) => ns / 1e6;
  // Written whole, then renamed: the bench reads the file as soon as it exists (a read of a half-written file failed P7).
  const file = process.env.BENCH_LOOP_FILE as string;
  fs.writeFileSync(`${file}.tmp`, JSON.stringify({ p50: ms(h.percentile(50)), p99: ms(h.percentile(99)), max: ms(h.max), count: h.count }));
  fs.renameSync(`${file}.tmp`, file);
});
