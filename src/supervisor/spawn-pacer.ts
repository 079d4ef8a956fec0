/**
 * One job spawned per event-loop turn (issue 12, P7). A spawn holds the main thread until the
 * child has exec'd (libuv waits for it), tens of ms on a busy machine; 64 generation requests
 * arriving together were spawned back to back in one turn, and every read that came meanwhile
 * waited for all of them (seconds). Paced, the reads of the console are answered between two
 * spawns: each request waits for its turn, in arrival order.
 */
export class SpawnPacer {
  private readonly queue: (() => void)[] = [];
  private scheduled = false;

  /** Resolves in a later event-loop turn, at most one caller per turn, in call order. */
  turn(): Promise<void> {
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
    if (this.scheduled) return;
    this.scheduled = true;
    // The check phase: the poll phase (other requests' I/O) runs before the next turn.
    setImmediate(this.next);
  }

  private readonly next = (): void => {
    this.scheduled = false;
    this.queue.shift()?.();
    if (this.queue.length > 0) this.schedule();
  };
}
