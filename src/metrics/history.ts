/** The last 15 minutes of figures in memory (`GET /api/system-status/history`), one ring per figure; rates use the time that really passed. */
import { HISTORY_FIGURES, type HistoryFigure } from './history-figures.js';
import type { IntervalQuantiles } from './interval-quantiles.js';

/** Where the figures are read (composition root); counters are totals since start-up, durations in seconds. */
export interface FigureSources {
  /** Jobs running on this instance now. */
  runningJobs(): number;
  /** Output lines (stdout and stderr) of this instance's jobs. */
  outputLines(): number;
  /** Events this instance published that are stored, total. */
  eventsStored(): number;
  /** Event frames handed to stream clients, live and replayed. */
  eventsDelivered(): number;
  /** Open event streams now. */
  streamClients(): number;
  /** Stream clients disconnected as too slow, total. */
  slowClientsDropped(): number;
  /** Times the jobs' output stopped being read (backpressure). */
  outputPauses(): number;
  /** Replay pages read from the database (a resume point older than the replay memory). */
  replayPagesFromDatabase(): number;
  /** Events of severity `fallback` published. */
  fallbacksRaised(): number;
  /** Ms the worker threads spent running tasks. */
  poolBusyMs(): number;
  /** Worker threads now. */
  poolThreads(): number;
  /** Recorded since the last sample. */
  loopDelay(): IntervalQuantiles;
  /** GET answers but the event stream, since the last sample. */
  readLatency(): IntervalQuantiles;
  /** Bytes. */
  memory(): { rss: number; heapUsed: number };
}

export interface HistoryOptions {
  /** Ms between two samples (CONSOLE_HISTORY_SAMPLE_MS). */
  readonly intervalMs: number;
  /** Ms kept: 15 minutes. */
  readonly windowMs?: number;
  /** Ms since the epoch (tests pass their own). */
  readonly now?: () => number;
}

/** The samples of one instance, oldest first; `times` in ms since the epoch, null where nothing was measured. */
export interface HistorySnapshot {
  /** When each sample was taken, ms since the epoch. */
  readonly times: number[];
  /** Each figure's value at each sample, in the figure's unit; null where there was nothing to measure. */
  readonly series: Record<HistoryFigure, (number | null)[]>;
}

/** The charts' window: 15 minutes, in ms. */
export const HISTORY_WINDOW_MS = 15 * 60 * 1000;

interface Totals {
  readonly at: number;
  readonly lines: number;
  readonly stored: number;
  readonly delivered: number;
  readonly drops: number;
  readonly pauses: number;
  readonly replays: number;
  readonly fallbacks: number;
  readonly busyMs: number;
}

export class MetricsHistory {
  /** The window over the interval, plus one so the window is covered end to end. */
  readonly capacity: number;
  readonly intervalMs: number;
  readonly windowMs: number;
  private readonly times: Float64Array;
  private readonly columns: Record<HistoryFigure, Float64Array>;
  private next = 0;
  private size = 0;
  private last: Totals;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly sources: FigureSources,
    opts: HistoryOptions,
  ) {
    this.intervalMs = opts.intervalMs;
    this.windowMs = opts.windowMs ?? HISTORY_WINDOW_MS;
    this.now = opts.now ?? Date.now;
    this.capacity = Math.ceil(this.windowMs / this.intervalMs) + 1;
    this.times = new Float64Array(this.capacity);
    this.columns = Object.fromEntries(HISTORY_FIGURES.map((f) => [f.name, new Float64Array(this.capacity)])) as Record<HistoryFigure, Float64Array>;
    this.last = this.totals();
    // What was recorded before the first interval is not the first interval's.
    sources.loopDelay();
    sources.readLatency();
  }

  /** Bytes the samples hold: fixed when the history is made. */
  get memoryBytes(): number {
    return this.times.byteLength + HISTORY_FIGURES.length * this.capacity * Float64Array.BYTES_PER_ELEMENT;
  }

  /** Samples every `intervalMs` until {@link stop}; the timer never keeps the process alive. */
  start(): void {
    if (this.timer !== null) return;
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private totals(): Totals {
    const s = this.sources;
    return {
      at: this.now(),
      lines: s.outputLines(),
      stored: s.eventsStored(),
      delivered: s.eventsDelivered(),
      drops: s.slowClientsDropped(),
      pauses: s.outputPauses(),
      replays: s.replayPagesFromDatabase(),
      fallbacks: s.fallbacksRaised(),
      busyMs: s.poolBusyMs(),
    };
  }

  /** Takes one sample now (the timer calls it; tests with their clock). */
  sample(): void {
    const s = this.sources;
    const prev = this.last;
    const cur = this.totals();
    this.last = cur;
    const seconds = (cur.at - prev.at) / 1000;
    const delta = (a: number, b: number) => Math.max(0, a - b);
    const rate = (a: number, b: number) => (seconds > 0 ? delta(a, b) / seconds : NaN);
    const loop = s.loopDelay();
    const reads = s.readLatency();
    const memory = s.memory();
    const threads = s.poolThreads();
    const values: Record<HistoryFigure, number> = {
      runningJobs: s.runningJobs(),
      linesPerSecond: rate(cur.lines, prev.lines),
      eventsStoredPerSecond: rate(cur.stored, prev.stored),
      eventsDeliveredPerSecond: rate(cur.delivered, prev.delivered),
      streamClients: s.streamClients(),
      slowClientsDropped: delta(cur.drops, prev.drops),
      outputPauses: delta(cur.pauses, prev.pauses),
      eventLoopDelayP99: loop.p99 ?? NaN,
      readLatencyP50: reads.p50 ?? NaN,
      readLatencyP99: reads.p99 ?? NaN,
      rssBytes: memory.rss,
      heapUsedBytes: memory.heapUsed,
      poolUtilization: seconds > 0 && threads > 0 ? Math.min(1, delta(cur.busyMs, prev.busyMs) / (seconds * 1000 * threads)) : NaN,
      replayPagesFromDatabase: delta(cur.replays, prev.replays),
      fallbacksRaised: delta(cur.fallbacks, prev.fallbacks),
    };
    const i = this.next;
    this.times[i] = cur.at;
    for (const f of HISTORY_FIGURES) (this.columns[f.name] as Float64Array)[i] = values[f.name];
    this.next = (i + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** The samples of the last window, oldest first; `since` (ms since the epoch) keeps only newer ones. */
  snapshot(since?: number): HistorySnapshot {
    const oldest = this.now() - this.windowMs;
    const slots: number[] = [];
    for (let k = 0; k < this.size; k++) {
      const i = (this.next - this.size + k + this.capacity) % this.capacity;
      const at = this.times[i] as number;
      if (at >= oldest && (since === undefined || at > since)) slots.push(i);
    }
    const series = Object.fromEntries(
      HISTORY_FIGURES.map((f) => {
        const column = this.columns[f.name];
        return [f.name, slots.map((i) => finite(column[i] as number))];
      }),
    ) as Record<HistoryFigure, (number | null)[]>;
    return { times: slots.map((i) => this.times[i] as number), series };
  }
}

function finite(v: number): number | null {
  return Number.isFinite(v) ? v : null;
}
