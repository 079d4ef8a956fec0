/**
 * Quantiles of what was recorded since the last look: the event-loop delays and read
 * latencies of one sampling interval of the history (history.ts). Prometheus's histograms
 * count since start-up and its quantiles come from rates over a window; the page's charts need
 * the interval's own p50 and p99, so each interval is recorded apart and reset when taken.
 */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

/** What one interval held: quantiles in seconds, null when nothing was recorded. */
export interface IntervalQuantiles {
  readonly count: number;
  readonly p50: number | null;
  readonly p99: number | null;
}

export class IntervalRecorder {
  /** Microseconds: perf_hooks histograms record integers of at least 1, at about 1% precision. */
  private readonly histogram: RecordableHistogram = createHistogram();

  /** Records one duration, in seconds (negative and sub-microsecond ones count as 1 µs). */
  readonly record = (seconds: number): void => {
    this.histogram.record(Math.max(1, Math.round(seconds * 1e6)));
  };

  /** The quantiles of what was recorded since the last call, then starts a new interval. */
  take(): IntervalQuantiles {
    const h = this.histogram;
    const count = h.count;
    const out = count === 0 ? { count, p50: null, p99: null } : { count, p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6 };
    h.reset();
    return out;
  }
}
