// Reads that wait until events published before them are stored (bus.ts, where a writer thread stores them later), and
// publishes that wait until a console write's staged events are delivered.

/** Waiters each for an id to be stored, released in id order. */
export class StoredWaiters {
  private readonly waiting: { readonly id: number; readonly resolve: () => void }[] = [];

  get size(): number {
    return this.waiting.length;
  }

  /** @returns a promise resolved once {@link release} reaches `id`, or at {@link releaseAll}. */
  add(id: number): Promise<void> {
    return new Promise((resolve) => this.waiting.push({ id, resolve }));
  }

  /** Resolves the waiters for ids up to `storedUpTo` (Infinity: all). */
  release(storedUpTo: number): void {
    let n = 0;
    // Ids grow with time, so the waiters are in id order.
    while (n < this.waiting.length && (this.waiting[n] as { id: number }).id <= storedUpTo) n++;
    for (const w of this.waiting.splice(0, n)) w.resolve();
  }

  /** Resolves every waiter (a failed store, the bus closing: the read then gets what is stored). */
  releaseAll(): void {
    this.release(Infinity);
  }
}

/**
 * The bus's heads: `stored`, the newest id stored (every smaller one was), and `plain`, the newest id published but as a
 * job's line (a read waits for it to be stored: read-your-writes, never for lines); and the waiters for an id stored.
 */
export class StoredHeads {
  plain = 0;
  readonly waiters = new StoredWaiters();

  constructor(public stored: number) {}

  /** Whether an event other than a job's line was published and is not stored yet. */
  get plainUnstored(): boolean {
    return this.plain > this.stored;
  }

  /** Events up to `id` were stored (and are delivered before {@link release}). */
  storedUpTo(id: number): void {
    this.stored = Math.max(this.stored, id);
  }

  /** Releases the waiters up to the id stored, every one when `drained` (nothing queued). */
  release(drained: boolean): void {
    if (this.waiters.size > 0) this.waiters.release(drained ? Infinity : this.stored);
  }
}

/**
 * A console write's staged events not settled yet (EventBus.stage, then settle after its commit), and waits for none to
 * be: an event stored after that transaction is delivered after its events, which have the smaller ids.
 */
export class UnsettledStages {
  private count = 0;
  private readonly waiting: (() => void)[] = [];

  opened(): void {
    this.count++;
  }

  closed(): void {
    if (--this.count === 0) for (const resolve of this.waiting.splice(0)) resolve();
  }

  /** Resolves once no stage is unsettled (at once when none is). */
  async none(): Promise<void> {
    while (this.count > 0) await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
}
