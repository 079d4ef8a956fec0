/** Worker-pool task deadlines on one timer: a per-task `AbortSignal.timeout` filled the old GC generation under load (bench/RESULTS.md). */
/** One task's deadline, the signal given to Piscina; aborted once passed unless {@link done} came first. */
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

  /** The task ended either way. */
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

  /** A deadline `timeoutMs` from now; its abort is never early, at most one loop turn late. */
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
