// The queued rows that carry a job guard (event.ts JobGuard) on the SQLite bus (bus.ts): counted, so a stored
// batch is searched for them only when one is queued, and told how their store ended.
import type { Pending } from './bus-options.js';

/** The guarded rows the bus holds, and what it tells of them (JobGuard.settled, refused; its fenced listeners). */
export class JobGuards {
  /** Queued or in-flight rows carrying a guard. */
  private count = 0;
  private readonly fencedListeners: ((proposalId: string) => void)[] = [];

  /** A row was queued (`guarded`: it carries a guard). */
  queued(guarded: boolean): void {
    if (guarded) this.count++;
  }

  /** Adds a listener told of each job whose event was dropped (another instance marked it lost). */
  onFenced(fn: (proposalId: string) => void): void {
    this.fencedListeners.push(fn);
  }

  /** `batch` was stored: each guarded row is settled, stored unless `kept` (non-null) lacks it; a dropped job is fenced. */
  stored(batch: readonly Pending[], kept: readonly Pending[] | null): void {
    if (this.count === 0) return;
    const storedRows = kept === null ? null : new Set(kept);
    for (const r of batch) {
      const g = r.guard;
      if (g === undefined) continue;
      this.count--;
      const stored = storedRows === null || storedRows.has(r);
      g.settled?.(stored);
      if (!stored) for (const fn of this.fencedListeners) fn(g.job);
    }
  }

  /** A transaction that staged `rows` rolled back: they are settled as dropped (their writer saw the error). */
  rolledBack(rows: readonly Pending[]): void {
    for (const r of rows) {
      if (r.guard === undefined) continue;
      this.count--;
      r.guard.settled?.(false);
    }
  }

  /**
   * A store failed with `err`: the job starts (JobGuard.start) among the rows to hold are withdrawn and refused, never
   * held for the retry (a launch is answered now, its job killed; none is dropped by the bound on what is held unsettled);
   * `withdrawn` is told of each. @returns the rows to hold, `batch` itself when none was a start.
   */
  refuseStarts(batch: Pending[], err: unknown, withdrawn: (row: Pending) => void): Pending[] {
    if (this.count === 0) return batch;
    const starts = batch.filter((r) => r.guard?.start !== undefined);
    if (starts.length === 0) return batch;
    const error = err instanceof Error ? err : new Error(String(err));
    for (const r of starts) {
      this.count--;
      withdrawn(r);
      r.guard?.refused?.(error);
    }
    return batch.filter((r) => r.guard?.start === undefined);
  }
}
