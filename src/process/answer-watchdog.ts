/**
 * How long a thread may leave an awaited answer unanswered before it is taken for dead (hung), counted in ticks of a
 * timer on the waiting thread, not by the clock: a pause of the whole process (SIGSTOP, a suspended machine) is one
 * tick however long, so what the thread does right after it is not taken for a hang. Used by the event writer
 * thread's client (an append's answer) and the job I/O thread's (a ping's).
 */

/** Default limit, ms: far past any lock wait (5 s) or turn of a thread that is alive. The service passes its CONSOLE_THREAD_ANSWER_LIMIT_MS (the same default). */
export const ANSWER_LIMIT_MS = 60_000;

/** Counts the ticks one awaited answer has gone without (see the module's comment). */
export class AnswerWatchdog {
  /** The owner's timer period, ms: min(1 s, the limit). */
  readonly tickMs: number;
  private watched: number | null = null;
  private ticks = 0;

  /** @param limitMs ms an answer may take: past it {@link tick} says so. */
  constructor(readonly limitMs = ANSWER_LIMIT_MS) {
    this.tickMs = Math.min(1000, limitMs);
  }

  /**
   * One tick of the owner's timer while `awaiting` (the id of what is awaited; a new id starts the count again) is
   * unanswered. The first tick may come right after the question: the limit counts from the second.
   * @returns true once the limit passed for it.
   */
  tick(awaiting: number): boolean {
    if (this.watched !== awaiting) {
      this.watched = awaiting;
      this.ticks = 0;
    }
    return ++this.ticks * this.tickMs > this.limitMs;
  }

  /** The error a hung thread is reported with. */
  hung(thread: string): Error {
    return hungError(thread, this.limitMs);
  }
}

/** `the <thread> thread did not answer within <limitMs> ms`: the error a thread taken for hung is reported with. */
export function hungError(thread: string, limitMs: number): Error {
  return new Error(`the ${thread} thread did not answer within ${limitMs} ms`);
}
