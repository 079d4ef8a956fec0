// The bus's port to event storage (api-decisions.md, Events: ids decimal, strictly increasing, never reused),
// implemented by src/state/sqlite/event-log.ts, so the dependency points one way: state -> bus.
import type { EventFilter, JobGuard, Severity } from './event.js';
import type { FrameBlock } from './frames.js';

/** One stored event: its id, the columns filters use, and its JSON (BusEvent) as served. */
export interface EventRow {
  readonly id: number;
  readonly severity: Severity;
  readonly scope: string;
  /** The proposal the event is about (written; reads leave it out). */
  readonly proposalId?: string | null;
  readonly data: string;
  /** What the event commits with (event.ts JobGuard; written, never read back). */
  readonly guard?: JobGuard;
}

/**
 * Told of a later append's end ({@link LocalEventLog.appendLater}): what {@link LocalEventLog.append} returns, or the
 * database's error; with `frames`, the rows' Server-Sent Events frames made where they were stored (only when every
 * row was kept; read them in `done`, see BusSubscriber).
 */
export type AppendDone = (kept: readonly EventRow[] | null, err: Error | null, frames?: FrameBlock) => void;

/** The event log as the bus uses it; methods throw the database's error when it refuses. */
export interface LocalEventLog {
  /** The next id, never handed out before (also across restarts). */
  takeId(): number;
  /** Stores rows (ids ascending) with their job ends in one transaction, dropping those of jobs not running; @returns null if all stored, else those stored. */
  append(rows: readonly EventRow[]): readonly EventRow[] | null;
  /** Whether {@link appendLater} stores on a writer thread; when not, the bus appends here. */
  readonly writesLater?: boolean;
  /**
   * Stores rows (ids ascending) on the writer thread, one append at a time; `done` is told later on this thread with
   * what {@link append} returns, or the database's error. @returns false, storing nothing, when it cannot now.
   */
  appendLater?(rows: readonly EventRow[], done: AppendDone): boolean;
  /** Waits (blocking) for the append on the writer thread, its `done` run; a no-op when none is. */
  drain?(): void;
  /**
   * Resolves once no append is on the writer thread (its `done` run), without blocking; none starts there until the
   * returned release runs ({@link appendLater} refuses): the caller stores here meanwhile. Rejects when the thread died.
   */
  quiesce?(): Promise<() => void>;
  /** Re-reads what the database holds after a rolled-back transaction that appended rows. */
  resync(): void;
  /** The newest id handed out (0 when none). */
  readonly lastIssuedId: number;
  /** Approximate between retention passes. */
  readonly size: number;
  /** Stored events after `sinceId` (and at most `upTo`) passing `filter`, ascending, at most `limit`. */
  after(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[];
  /** {@link after}'s events as Server-Sent Events frames (frames.ts), one string per event: a replay page. */
  framesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): string[];
  /** The newest `limit` stored events passing `filter`, ascending. */
  newest(limit: number, filter: EventFilter): EventRow[];
}

/**
 * Runs `work` once `quiet` ({@link LocalEventLog.quiesce}) resolved, and releases when it ended (settled, if a promise).
 * @returns `work`'s result; @throws (rejects) `quiet`'s error (work not run) or `work`'s.
 */
export async function whileQuiet<T>(quiet: Promise<() => void>, work: () => T | Promise<T>): Promise<T> {
  const release = await quiet;
  try {
    return await work();
  } finally {
    release();
  }
}
