/** Quantiles of one history interval (its own p50/p99, unlike Prometheus's since-start histograms); reset when taken. */
import { createHistogram, type RecordableHistogram } from 'node:perf_hooks';

/** Quantiles in seconds, null when nothing was recorded. */
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

  /** The quantiles since the last call; starts a new interval. */
  take(): IntervalQuantiles {
    const h = this.histogram;
    const count = h.count;
    const out = count === 0 ? { count, p50: null, p99: null } : { count, p50: h.percentile(50) / 1e6, p99: h.percentile(99) / 1e6 };
    h.reset();
    return out;
  }
}
