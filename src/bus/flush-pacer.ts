// When the bus (bus.ts) stores its queue: one flush scheduled at a time, `flushIntervalMs` apart at the earliest
// (CONSOLE_EVENT_FLUSH_INTERVAL_MS: fewer, larger transactions under a storm).

/** Paces the bus's flushes: {@link schedule} runs `flush` on a later turn, {@link flushed} marks one done. */
export class FlushPacer {
  private scheduled = false;
  private lastAt = -Infinity;

  /** @param intervalMs the least time between two flushes' ends and starts, in ms (0: the next turn). */
  constructor(
    private readonly intervalMs: number,
    private readonly flush: () => void,
  ) {}

  /** Schedules a flush unless one is: on the next turn, or `intervalMs` after the last one, and `minWaitMs` from now at the least. */
  schedule(minWaitMs = 0): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const wait = Math.max(minWaitMs, this.lastAt + this.intervalMs - performance.now());
    if (wait < 1) setImmediate(this.tick);
    else setTimeout(this.tick, wait);
  }

  /** A flush ended now: the next scheduled one is paced from here. */
  flushed(): void {
    this.lastAt = performance.now();
  }

  /** Runs the flush (a timer's, or a caller's that goes at once); from here a flush may be scheduled again. */
  readonly tick = (): void => {
    this.scheduled = false;
    this.flush();
  };
}
