/**
 * Backpressure on the jobs' output (issue 12, P7): while the bus is behind, no job's pipe is
 * read, so each child blocks in its own write instead of the service holding its lines.
 *
 * "Behind" is precise: the bus holds at least `max` events it has published but not stored
 * (queued for the next store, or held while the state database refuses them: a full disk).
 * Stores run every 512 events and every event-loop turn, so in normal running the backlog
 * stays under 512; it grows when storing stops. The gate closes at `max` and opens again once
 * the backlog is at most half of it (checked every CHECK_MS while closed), so a backlog near
 * the bound does not open and close it on every line. Closed, the framing delivers no line
 * (src/supervisor/frame-lines.ts): split2's buffers fill, then the pipe, and the child blocks.
 * Nothing is dropped: the lines wait in the children's pipes, in order.
 */

/** How often a closed gate looks at the backlog again. */
const CHECK_MS = 20;

/** What the gate reports (system status `jobs.backpressure`, metrics). */
export interface OutputGateStats {
  /** CONSOLE_EVENT_BACKLOG_MAX. */
  readonly backlogMax: number;
  /** Whether the jobs' output is held now. */
  readonly paused: boolean;
  /** Times the gate closed since start-up. */
  readonly pauses: number;
  /** Time it was closed since start-up, in ms (the current pause included). */
  readonly pausedMs: number;
}

/** The part of the framing that waits for the gate (frame-lines.ts). */
export interface LineHold {
  /** True while no line may be delivered. */
  readonly held: boolean;
  /** Calls `resume` once the gate opens again. */
  whenReleased(resume: () => void): void;
}

export class OutputGate implements LineHold {
  private closedAt: number | null = null;
  private timer: NodeJS.Timeout | undefined;
  private readonly waiting: (() => void)[] = [];
  private closings = 0;
  private closedMs = 0;
  private stopped = false;

  /**
   * @param backlog the bus's events published and not stored yet.
   * @param max CONSOLE_EVENT_BACKLOG_MAX: the backlog at which the gate closes.
   */
  constructor(
    private readonly backlog: () => number,
    readonly max: number,
  ) {}

  get held(): boolean {
    return this.closedAt !== null;
  }

  /** Looks at the backlog after a line was published: closes the gate at the bound. */
  check(): void {
    if (this.stopped || this.closedAt !== null || this.backlog() < this.max) return;
    this.closedAt = performance.now();
    this.closings++;
    this.timer = setInterval(() => {
      if (this.backlog() <= this.max / 2) this.open();
    }, CHECK_MS);
    this.timer.unref();
  }

  whenReleased(resume: () => void): void {
    this.waiting.push(resume);
  }

  /** Opens the gate (also at shutdown): the waiting streams go on, in the order they stopped. */
  open(): void {
    if (this.closedAt === null) return;
    this.closedMs += performance.now() - this.closedAt;
    this.closedAt = null;
    clearInterval(this.timer);
    for (const resume of this.waiting.splice(0)) resume();
  }

  /**
   * Opens the gate for good (shutdown): the jobs are being stopped, and their last lines must
   * reach the bus, which holds what it cannot store and reports it at its close.
   */
  stop(): void {
    this.stopped = true;
    this.open();
  }

  stats(): OutputGateStats {
    const current = this.closedAt === null ? 0 : performance.now() - this.closedAt;
    return { backlogMax: this.max, paused: this.closedAt !== null, pauses: this.closings, pausedMs: Math.round(this.closedMs + current) };
  }
}
