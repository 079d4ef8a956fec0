/**
 * Event-loop delay sampling for `console_event_loop_delay_seconds`. A timer due every
 * `intervalMs` records how late it ran: a main thread held for 300 ms makes the next tick
 * at least 300 − intervalMs late, whichever phase of the loop held it. (perf_hooks'
 * monitorEventLoopDelay, behind prom-client's `nodejs_eventloop_lag_*` gauges, misses a
 * block that happens in some phases, e.g. in a setImmediate callback, on Node 20.)
 */
import { performance } from 'node:perf_hooks';
import type { Histogram } from 'prom-client';

/**
 * Starts sampling into `histogram` (seconds). The timer is unref'd: it never keeps the
 * process alive.
 * @param also called with each delay too (seconds): the history's interval quantiles.
 * @returns a function that stops the sampling.
 */
export function sampleEventLoopDelay(histogram: Histogram, intervalMs = 20, also?: (seconds: number) => void): () => void {
  let due = performance.now() + intervalMs;
  const timer = setInterval(() => {
    const now = performance.now();
    const delay = Math.max(0, now - due) / 1000;
    histogram.observe(delay);
    also?.(delay);
    due = now + intervalMs;
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
