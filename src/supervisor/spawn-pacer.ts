/**
 * One job spawned per event-loop turn, since a spawn holds the main thread until exec; the next also
 * waits until the last child's priority was lowered (`done`) or `holdMs`: full-weight children starve the service.
 */
export class SpawnPacer {
  private readonly queue: ((done: () => void) => void)[] = [];
  private scheduled = false;
  private held = false;

  constructor(private readonly holdMs = 100) {}

  /** Resolves in a later turn, one caller at a time in call order, with `done`, which (or `holdMs`) lets the next in. */
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
