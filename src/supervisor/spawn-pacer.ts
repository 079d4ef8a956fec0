/**
 * One job spawned at a time, each in an event-loop turn of its own (issue 12, P7).
 *
 * - A spawn holds the main thread until the child has exec'd (libuv waits for it), tens of ms
 *   on a busy machine; 64 generation requests arriving together were spawned back to back in
 *   one turn, and every read that came meanwhile waited for all of them (seconds). Paced, the
 *   reads of the console are answered between two spawns: each request waits for its turn, in
 *   arrival order.
 * - A new job runs in a scheduling group (autogroup) of its own at the service's weight until
 *   the process worker has lowered it (job-priority.ts). Spawned in a burst, dozens of such
 *   children started at full weight at once, starving the service's main thread and the very
 *   worker that lowers them: reads made during the burst waited up to a second. So the next
 *   turn comes only once the caller says its child was lowered (`done`), or after `holdMs`.
 */
export class SpawnPacer {
  private readonly queue: ((done: () => void) => void)[] = [];
  private scheduled = false;
  /** A turn was given and its `done` has not come yet. */
  private held = false;

  /** @param holdMs longest wait for a turn's `done` before the next turn comes anyway. */
  constructor(private readonly holdMs = 100) {}

  /**
   * Resolves in a later event-loop turn, one caller at a time, in call order, with `done`:
   * the next caller's turn comes after it is called (calling it again does nothing), or
   * `holdMs` after this turn began.
   */
  turn(): Promise<() => void> {
    return new Promise((resolve) => {
      this.queue.push(resolve);
      this.schedule();
    });
  }

  /** Callers waiting for their turn. */
  get waiting(): number {
    return this.queue.length;
  }

  private schedule(): void {
    if (this.scheduled || this.held) return;
    this.scheduled = true;
    // The check phase: the poll phase (other requests' I/O) runs before the next turn.
    setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.scheduled = false;
    const give = this.queue.shift();
    if (give === undefined) return;
    this.held = true;
    let timer: NodeJS.Timeout | undefined = undefined;
    const done = () => {
      if (!this.held || timer === undefined) return;
      clearTimeout(timer);
      timer = undefined;
      this.held = false;
      if (this.queue.length > 0) this.schedule();
    };
    timer = setTimeout(done, this.holdMs);
    timer.unref();
    give(done);
  };
}
