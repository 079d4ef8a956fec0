// Engine event types (spec: Resources, "Engine event"; api-decisions.md, Events).

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
  /** The proposal the event is about when its payload has no `proposal_id` (job line events); for the filter, never served. */
  readonly proposalId?: string;
  /** The job state the event commits with, or the event is dropped (cluster.md, "Under faults"). Never served. */
  readonly guard?: JobGuard;
}

/** How a generation job ended, written with its exit or lost event. Times ISO-8601 UTC. */
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
 * What a job's event commits with, so the job's state and events never disagree (cluster.md, "Under faults"): with
 * `end`, the final state is written only over `running`, else the event is dropped; without, on PostgreSQL it is
 * stored only while the job is `running` (else fenced).
 */
export interface JobGuard {
  /** The job's proposal id. */
  readonly job: string;
  readonly end?: JobEnd;
  /** The job's record, stored with its spawn event (the job's first): never dropped, and refused, not held, when its store fails. */
  readonly start?: JobStart;
  /** Told once the event was stored (true) or dropped (false); never when the bus closes with it unstored. Must not throw. */
  readonly settled?: (stored: boolean) => void;
  /** With `start`: told instead of `settled` when the store failed; the event is withdrawn (its id never reused). Must not throw. */
  readonly refused?: (err: Error) => void;
}

/**
 * A generation job's start as it commits with its spawn event (service-spec.md §Generation; cluster.md): the
 * job `running`, owned by `instanceId`, and its pending GenerationProposal. Plain data: it crosses to the event
 * writer thread. Times ISO-8601 UTC.
 */
export interface JobStart {
  readonly job: {
    readonly proposalId: string;
    readonly projectId: string;
    readonly pid: number | null;
    readonly argv: readonly string[];
    readonly startedAt: string;
    readonly instanceId: string;
  };
  readonly proposal: {
    readonly id: string;
    readonly kind: string | null;
    readonly title: string | null;
    readonly payload: object;
    readonly createdAt: string;
  };
}

/** The proposal an event is about: `input.proposalId`, else a string `payload.proposal_id`, else null. */
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
  /** Only events about this proposal ({@link proposalOf}); absent or null: any. */
  readonly proposalId?: string | null;
}

export const NO_FILTER: EventFilter = Object.freeze({ severities: null, scopePrefix: null });

/** True when an event with this severity, scope and proposal ({@link proposalOf}) passes `filter`. */
export function passes(filter: EventFilter, severity: Severity, scope: string, proposalId: string | null = null): boolean {
  if (filter.severities !== null && !filter.severities.includes(severity)) return false;
  if (filter.proposalId != null && filter.proposalId !== proposalId) return false;
  return filter.scopePrefix === null || scope.startsWith(filter.scopePrefix);
}

/** True when `filter` passes every event (no severity, scope or proposal). */
export const isEverything = (f: EventFilter): boolean => f.severities === null && f.scopePrefix === null && f.proposalId == null;

/** A stable key for a filter, so subscribers with equal filters can share one frame batch. */
export function filterKey(filter: EventFilter): string {
  const sev = filter.severities === null ? '*' : [...new Set(filter.severities)].sort().join(',');
  return `${sev}|${filter.proposalId ?? ''}|${filter.scopePrefix ?? ''}`;
}
