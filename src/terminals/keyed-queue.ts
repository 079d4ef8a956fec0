/** Tasks run one after another per key, keys side by side; an idle key's chain is forgotten. */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `fn` once every earlier task of `key` settled; resolves or rejects as `fn` does. */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** Resolves once every task of `key` queued so far settled (never rejects). */
  async settled(key: string): Promise<void> {
    await this.tails.get(key);
  }

  /** Keys with a task queued or running. */
  get size(): number {
    return this.tails.size;
  }
}
