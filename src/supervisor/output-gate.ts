/**
 * Backpressure on job output: at `max` unstored events on the bus (a full disk…) no job pipe is
 * read, so children block in their writes and nothing is dropped; it reopens at half, not to flap.
 */

const CHECK_MS = 20;

/** What the gate reports (system status `jobs.backpressure`, metrics). */
export interface OutputGateStats {
  /** CONSOLE_EVENT_BACKLOG_MAX. */
  readonly backlogMax: number;
  /** Whether the jobs' output is held now. */
  readonly paused: boolean;
  /** Times the gate closed since start-up. */
  readonly pauses: number;
  /** Ms closed since start-up, the current pause included. */
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

  /** @param backlog the bus's unstored events; @param max CONSOLE_EVENT_BACKLOG_MAX, where the gate closes. */
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

  /** Opens for good at shutdown: the stopping jobs' last lines must reach the bus. */
  stop(): void {
    this.stopped = true;
    this.open();
  }

  stats(): OutputGateStats {
    const current = this.closedAt === null ? 0 : performance.now() - this.closedAt;
    return { backlogMax: this.max, paused: this.closedAt !== null, pauses: this.closings, pausedMs: Math.round(this.closedMs + current) };
  }
}
