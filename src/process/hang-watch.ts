/**
 * Deadlines for the tasks a pool of one worker thread runs (the housekeeping thread's, the replay thread's): the task
 * running, not answered within the limit, is aborted (Piscina then terminates its thread and starts another, which runs
 * the tasks queued behind it), and its caller falls back as for a failed task. The limit is counted in ticks of a timer on the main
 * thread, not by the clock, as the answer watchdog counts (answer-watchdog.ts): a pause of the whole process counts
 * once. A thread stuck for good (a read of `/proc` in uninterruptible sleep, a native call that never returns) then
 * holds up nothing but itself. (The synthesis pool's deadlines, workers/task-deadlines.ts, are another thing: a
 * request's time by the clock, queueing included, answered 503.)
 */
import { ANSWER_LIMIT_MS, hungError } from './answer-watchdog.js';

interface Open {
  ticks: number;
  readonly controller: AbortController;
}

/** Watches one pool's tasks under way (queued or running) for a hang of its thread. */
export class HangWatch {
  /** The timer's period, ms: min(1 s, the limit). */
  readonly tickMs: number;
  private readonly open = new Set<Open>();
  private timer: NodeJS.Timeout | null = null;

  /**
   * @param thread the thread's name in the error (`the <thread> thread did not answer within <limitMs> ms`).
   * @param onHang told of each task aborted, with its error (the thread it ran on is replaced).
   * @param limitMs ms a task may take once it is the oldest under way (CONSOLE_THREAD_ANSWER_LIMIT_MS).
   */
  constructor(
    private readonly thread: string,
    private readonly onHang: (err: Error) => void = () => {},
    readonly limitMs = ANSWER_LIMIT_MS,
  ) {
    this.tickMs = Math.min(1000, limitMs);
  }

  /** Runs `task` with a signal aborted past the limit. @returns what `task` returns; rejects as it does (an abort included). */
  async run<T>(task: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const entry: Open = { ticks: 0, controller: new AbortController() };
    this.open.add(entry);
    this.timer ??= setInterval(() => this.tick(), this.tickMs).unref();
    try {
      return await task(entry.controller.signal);
    } finally {
      this.open.delete(entry);
      if (this.open.size === 0 && this.timer !== null) {
        clearInterval(this.timer);
        this.timer = null;
      }
    }
  }

  /**
   * Only the oldest task under way is counted: on a pool of one thread (both are) that is the one running, and the
   * tasks queued behind it start counting once it ended (or was aborted: its replacement thread runs them).
   */
  private tick(): void {
    const oldest = this.open.values().next().value;
    if (oldest === undefined || ++oldest.ticks * this.tickMs <= this.limitMs) return;
    // As the answer watchdog: the first tick may come right after the task started, so the limit counts from the second.
    const err = hungError(this.thread, this.limitMs);
    this.open.delete(oldest);
    oldest.controller.abort(err);
    this.onHang(err);
  }
}
