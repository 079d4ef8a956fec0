/**
 * The deadlines of the worker pool's tasks (CONSOLE_STORE_READ_TIMEOUT_MS, issue 10, item 2),
 * kept with one timer for all of them.
 *
 * `AbortSignal.timeout(ms)` per task made a timer of its own, held weakly by the signal and
 * cleared only once the signal was collected: each lived the whole timeout (30 s by default)
 * and went to the old generation with what it held. An `AbortController` per task, with one
 * timer, still sent most of that there (Node's event targets). Under a read load that
 * re-synthesises (bench P5, about 19,000 tasks a second) it was 50 MB a second into the old
 * generation, and each young-generation collection took 2-3 ms instead of 0.5-1
 * (bench/RESULTS.md, issue 11). So a task's signal is a small object of our own, in the shape
 * Piscina accepts (`addEventListener`, `removeEventListener`, `aborted`, `reason`).
 *
 * The timeout is one figure, so deadlines come in the order tasks start: the pending ones are
 * kept in that order (a Map), a finished one leaves at once, and one timer waits for the oldest.
 */

/**
 * One task's deadline: the signal given to Piscina (`run(task, { signal })`). Aborted once its
 * time has passed, unless {@link done} was called first.
 */
export class TaskDeadline {
  aborted = false;
  /** Why it was aborted: a `TimeoutError` DOMException, as `AbortSignal.timeout` gives. */
  reason: unknown = undefined;
  private listeners: (() => void)[] = [];

  constructor(
    private readonly owner: Map<number, TaskDeadline>,
    private readonly key: number,
    /** `performance.now()` past which the task is aborted. */
    readonly at: number,
  ) {}

  addEventListener(_type: 'abort', listener: () => void): void {
    if (!this.aborted) this.listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const i = this.listeners.indexOf(listener);
    if (i !== -1) this.listeners.splice(i, 1);
  }

  /** The task ended (either way): its deadline no longer counts. */
  done(): void {
    this.owner.delete(this.key);
    this.listeners = [];
  }

  /** @internal Called by {@link TaskDeadlines} once the deadline has passed. */
  expire(reason: DOMException): void {
    this.aborted = true;
    this.reason = reason;
    const listeners = this.listeners;
    this.listeners = [];
    for (const l of listeners) l();
  }
}

export class TaskDeadlines {
  private readonly pending = new Map<number, TaskDeadline>();
  private nextKey = 0;
  private timer: NodeJS.Timeout | null = null;

  /** @param timeoutMs how long a task may take from its start, queueing included (ms, ≥ 1). */
  constructor(readonly timeoutMs: number) {}

  /**
   * The deadline of a task that starts now, `timeoutMs` from now. Its abort comes on the
   * timer's turn: never early, at most a turn of the event loop late.
   */
  start(): TaskDeadline {
    const key = this.nextKey++;
    const deadline = new TaskDeadline(this.pending, key, performance.now() + this.timeoutMs);
    this.pending.set(key, deadline);
    if (this.timer === null) this.arm(this.timeoutMs);
    return deadline;
  }

  /** Deadlines started and not done nor passed. */
  get size(): number {
    return this.pending.size;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.expire(), Math.max(1, Math.ceil(ms)));
    // A pending deadline never keeps the process alive on its own.
    this.timer.unref();
  }

  /** Aborts the tasks past their deadline (the oldest first), then waits for the next one. */
  private expire(): void {
    this.timer = null;
    const now = performance.now();
    for (const [key, d] of this.pending) {
      if (d.at > now) {
        this.arm(d.at - now);
        return;
      }
      this.pending.delete(key);
      d.expire(new DOMException(`the task took more than ${this.timeoutMs} ms`, 'TimeoutError'));
    }
  }
}
