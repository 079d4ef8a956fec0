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
}

export const NO_FILTER: EventFilter = Object.freeze({ severities: null, scopePrefix: null });

/** True when an event with this severity and scope passes `filter`. */
export function passes(filter: EventFilter, severity: Severity, scope: string): boolean {
  if (filter.severities !== null && !filter.severities.includes(severity)) return false;
  return filter.scopePrefix === null || scope.startsWith(filter.scopePrefix);
}

/** A stable key for a filter, so subscribers with equal filters can share one frame batch. */
export function filterKey(filter: EventFilter): string {
  const sev = filter.severities === null ? '*' : [...new Set(filter.severities)].sort().join(',');
  return `${sev}|${filter.scopePrefix ?? ''}`;
}
