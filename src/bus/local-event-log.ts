/**
 * What the bus needs from the place events are stored (api-decisions.md, Events: ids decimal,
 * strictly increasing, never reused). The bus owns this port and the state layer implements
 * it (src/state/sqlite/event-log.ts for SQLite), so the dependency points one way: state -> bus.
 */
import type { EventFilter, JobGuard, Severity } from './event.js';

/** One stored event: its id, the columns filters use, and its JSON (BusEvent) as served. */
export interface EventRow {
  readonly id: number;
  readonly severity: Severity;
  readonly scope: string;
  /** The proposal the event is about (written; reads leave it out). Absent: none (issue 14, item 2). */
  readonly proposalId?: string | null;
  readonly data: string;
  /** What the event commits with (event.ts JobGuard; written, never read back). */
  readonly guard?: JobGuard;
}

/** The event log as the bus uses it; methods throw the database's error when it refuses. */
export interface LocalEventLog {
  /** The next id, never handed out before (also across restarts). */
  takeId(): number;
  /**
   * Stores rows (ids ascending) in one transaction, applying each row's job end (event.ts
   * JobGuard) in it: a row whose job is no longer running is dropped.
   * @returns null when every row was stored, else the rows stored (the others were dropped).
   */
  append(rows: readonly EventRow[]): readonly EventRow[] | null;
  /** Re-reads what the database holds after a rolled-back transaction that appended rows. */
  resync(): void;
  /** The newest id handed out (0 when none). */
  readonly lastIssuedId: number;
  /** Events kept (approximate between retention passes). */
  readonly size: number;
  /** Stored events after `sinceId` (and at most `upTo`) passing `filter`, ascending, at most `limit`. */
  after(sinceId: number, limit: number, filter: EventFilter, upTo?: number): EventRow[];
  /** The newest `limit` stored events passing `filter`, ascending. */
  newest(limit: number, filter: EventFilter): EventRow[];
}
