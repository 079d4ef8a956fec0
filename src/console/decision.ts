// The proposal decision table (spec: Proposal decisions; Events) as a pure function; the caller records it.
import type { EventInput, Severity } from '../bus/event.js';
import { SERVICE_ERROR, type ServiceErrorLike } from '../errors/index.js';
import type { ProposalKind } from '../registry/index.js';

/** Decision values (spec: Proposal decisions). */
export const DECISIONS = ['approved', 'rejected', 'deferred'] as const;
export type Decision = (typeof DECISIONS)[number];

/** Scope of the fallback event of a decision on an id that was not pending (spec: Events). */
export const PROPOSAL_FALLBACK_SCOPE = 'api/proposals';

/** Label when no kind is given (Events rule 1). */
export const NO_KIND_LABEL = 'Proposal';

/** The codes of the console's errors. */
export type ConsoleErrorCode = 'invalid_decision';

/** A decision outside {@link DECISIONS}: the spec's ValueError, so a RangeError marked as a service error (422). */
export class DecisionValueError extends RangeError implements ServiceErrorLike {
  override name = 'DecisionValueError';
  readonly [SERVICE_ERROR] = true as const;
  readonly code = 'invalid_decision' as const;
  constructor(readonly value: unknown) {
    super(`invalid decision ${JSON.stringify(value)}: expected one of ${DECISIONS.join(', ')}`);
  }
}

export interface DecisionInput {
  readonly proposalId: string;
  /** Checked against {@link DECISIONS}. */
  readonly decision: string;
  /** The kind to evaluate with; null when none. */
  readonly kind: string | null;
  /** Whether the id was pending when this decision claimed it. */
  readonly wasPending: boolean;
  /** Extra payload members; they never replace the four members the spec names. */
  readonly extra?: Readonly<Record<string, unknown>>;
  /** Scope of the decision event. */
  readonly scope: string;
}

export interface DecisionOutcome {
  readonly decision: Decision;
  readonly label: string;
  readonly deferredExecution: boolean;
  /** The decision event (detail null). */
  readonly event: EventInput;
  /** When was_pending is false: the fallback raised and its own event. */
  readonly fallback: { readonly name: 'proposal_id_not_pending'; readonly event: EventInput } | null;
}

const SEVERITY: Readonly<Record<Decision, Severity>> = { approved: 'success', rejected: 'info', deferred: 'info' };

/** True when `value` is one of the decision values. */
export function isDecision(value: unknown): value is Decision {
  return typeof value === 'string' && (DECISIONS as readonly string[]).includes(value);
}

/**
 * Evaluates one decision (spec: Proposal decisions): label registered for `kind`, else `kind`, else `Proposal`;
 * deferred_execution unless `kind` has an executor; severity by decision, or `fallback` with the
 * `proposal_id_not_pending` event when not pending; summary `<label> <decision> (<proposal_id>)`.
 * @throws DecisionValueError for a decision value outside approved, rejected, deferred.
 */
export function evaluateDecision(input: DecisionInput, kinds: readonly ProposalKind[]): DecisionOutcome {
  const { proposalId, kind, wasPending, scope } = input;
  if (!isDecision(input.decision)) throw new DecisionValueError(input.decision);
  const decision = input.decision;
  const registered = kind === null ? undefined : kinds.find((k) => k.name === kind);
  const label = registered ? registered.label : (kind ?? NO_KIND_LABEL);
  const deferredExecution = !registered || registered.executor === null;
  const payload = withExtra({ proposal_id: proposalId, decision, kind, deferred_execution: deferredExecution }, input.extra);
  const event: EventInput = {
    severity: wasPending ? SEVERITY[decision] : 'fallback',
    scope,
    summary: `${label} ${decision} (${proposalId})`,
    detail: null,
    payload,
  };
  const fallback = wasPending
    ? null
    : {
        name: 'proposal_id_not_pending' as const,
        event: {
          severity: 'fallback' as const,
          scope: PROPOSAL_FALLBACK_SCOPE,
          summary: 'proposal_id_not_pending',
          detail: null,
          payload: { proposal_id: proposalId, decision },
        },
      };
  return { decision, label, deferredExecution, event, fallback };
}

/** `base` followed by the members of `extra` that `base` does not have. */
export function withExtra(base: Record<string, unknown>, extra: Readonly<Record<string, unknown>> | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  if (extra) for (const [k, v] of Object.entries(extra)) if (!Object.hasOwn(base, k)) out[k] = v;
  return out;
}
