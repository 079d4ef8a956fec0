/**
 * Engine event types (spec: Resources, "Engine event"; api-decisions.md, Events).
 */

/** EventSeverity: exactly these five values (api-decisions.md). */
export const SEVERITIES = ['info', 'success', 'failure', 'warning', 'fallback'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** What a producer hands to the bus; `id` and `ts` are assigned by the bus. */
export interface EventInput {
  readonly severity: Severity;
  /** Slash-separated channel, e.g. `engine/generation`. */
  readonly scope: string;
  readonly summary: string;
  readonly detail?: string | null;
  readonly payload?: Readonly<Record<string, unknown>>;
  /**
   * The proposal (generation job) the event is about, when its payload does not say it as
   * `proposal_id` (a job's line events, whose payload the spec fixes to `{ source }`). Stored as
   * the event log's runs for the `proposalId` filter (issue 14, item 2; SQLite: event-segments.ts,
   * PostgreSQL: an indexed column); never served.
   */
  readonly proposalId?: string;
  /**
   * The job state the event commits with (shared/design/cluster.md, "Under faults"): the event
   * log applies it in the transaction that stores the event, or drops the event. Never served.
   */
  readonly guard?: JobGuard;
}

/**
 * How a generation job ended: its final state, written with its exit or lost event. Times are
 * ISO-8601 UTC; line counts are the job's stdout and stderr lines.
 */
export interface JobEnd {
  /** `exited ok`, `exited failed` or `lost`. */
  readonly state: string;
  readonly endedAt: string;
  readonly rc: number | null;
  readonly signal: string | null;
  readonly stdoutLines: number;
  readonly stderrLines: number;
  /** Why it ended: `exited`, `cancelled`, `shutdown`, `lost` or `spawn failed`. */
  readonly exitReason: string;
  /** For a failure, the tool's last stderr line. */
  readonly exitDetail: string | null;
}

/**
 * What an event about a job commits with, so that a job's state and its events never disagree
 * (shared/design/cluster.md, "Under faults": a state change commits with its events; fencing).
 *
 * - With `end`: the job's final state is written in the transaction that stores the event, and
 *   only over `running` (a job marked `lost` stays lost). When the job is no longer running, the
 *   event is dropped: neither stored nor delivered.
 * - Without `end` (a line or leftovers event), on PostgreSQL: the event is stored only while the
 *   job is recorded `running`. A job another instance marked `lost` gets nothing more stored,
 *   and the bus reports it fenced (Bus.onFenced). One instance on SQLite has nobody to fence it:
 *   there such events are stored unchecked.
 */
export interface JobGuard {
  /** The job's proposal id. */
  readonly job: string;
  readonly end?: JobEnd;
  /** Told once the event was stored (true) or dropped (false); never when the bus closes with it unstored. Must not throw. */
  readonly settled?: (stored: boolean) => void;
}

/**
 * The proposal an event is about: `input.proposalId`, else the payload's `proposal_id` when it
 * is a string (spawn, exit, leftovers, lost, proposal and decision events), else null.
 */
export function proposalOf(input: EventInput): string | null {
  if (input.proposalId !== undefined) return input.proposalId;
  const p = input.payload?.proposal_id;
  return typeof p === 'string' ? p : null;
}

/** A published event, as stored and served. `id` is decimal digits, strictly increasing. */
export interface BusEvent {
  readonly id: string;
  /** ISO-8601 UTC with milliseconds. */
  readonly ts: string;
  readonly severity: Severity;
  readonly scope: string;
  readonly summary: string;
  readonly detail: string | null;
  readonly payload: Readonly<Record<string, unknown>>;
}

/** Filters shared by `GET /api/events` and the event stream. Null means "no filter". */
export interface EventFilter {
  readonly severities: readonly Severity[] | null;
  readonly scopePrefix: string | null;
  /** Only events about this proposal ({@link proposalOf}); absent or null: any (issue 14, item 2). */
  readonly proposalId?: string | null;
}

export const NO_FILTER: EventFilter = Object.freeze({ severities: null, scopePrefix: null });

/** True when an event with this severity, scope and proposal ({@link proposalOf}) passes `filter`. */
export function passes(filter: EventFilter, severity: Severity, scope: string, proposalId: string | null = null): boolean {
  if (filter.severities !== null && !filter.severities.includes(severity)) return false;
  if (filter.proposalId != null && filter.proposalId !== proposalId) return false;
  return filter.scopePrefix === null || scope.startsWith(filter.scopePrefix);
}

/** A stable key for a filter, so subscribers with equal filters can share one frame batch. */
export function filterKey(filter: EventFilter): string {
  const sev = filter.severities === null ? '*' : [...new Set(filter.severities)].sort().join(',');
  // Proposal ids are identifiers (no `|`); the scope prefix, any text, comes last.
  return `${sev}|${filter.proposalId ?? ''}|${filter.scopePrefix ?? ''}`;
}
