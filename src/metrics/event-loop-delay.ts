/** How late a timer due every `intervalMs` ran; perf_hooks' monitorEventLoopDelay misses some phases on Node 20. */
import { performance } from 'node:perf_hooks';
import type { Histogram } from 'prom-client';

/** Starts sampling into `histogram` (seconds) on an unref'd timer, `also` told each delay. @returns a function that stops it. */
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
