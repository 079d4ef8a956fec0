/**
 * Spawn pacing, on the job I/O thread (job-io-main.ts): one spawn order goes to the spawn helper per turn of the
 * thread's loop, and the next only once the last job was reported (the helper lowers it before it reports it) or
 * after `holdMs`: children starting at full weight would starve the service, and a burst of orders would hold the
 * thread's pipe reads for the whole burst. The main thread does not wait for turns: it posts every order at once.
 */
export class SpawnPacer {
  private readonly queue: ((done: () => void) => void)[] = [];
  private scheduled = false;
  private held = false;

  constructor(private readonly holdMs = 100) {}

  /** Resolves in a later turn, one caller at a time in call order, with `done`, which (or `holdMs`, ms) lets the next in. */
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
    let timer: NodeJS.Timeout | undefined;
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
