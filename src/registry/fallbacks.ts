// The sanctioned-fallback registry (spec: What the service does, startup guards): degraded paths allowed while a caller is fixed; past `retireBy` one stops start-up.

/** One registered fallback. `retireBy` is an ISO date (`YYYY-MM-DD`, UTC) or null (never). */
export interface SanctionedFallback {
  readonly name: string;
  readonly retireBy: string | null;
  readonly description: string;
}

/** Names of the fallbacks this service raises. */
export type FallbackName = 'proposal_id_not_pending' | 'take_id_not_on_disk';

/** The shipped registry. A decision on a no-longer-pending proposal is a legitimate race, so it never retires. */
export const SANCTIONED_FALLBACKS: readonly SanctionedFallback[] = Object.freeze([
  Object.freeze({
    name: 'proposal_id_not_pending',
    retireBy: null,
    description: 'A decision arrived for a proposal id that is not pending; it is recorded and flagged.',
  }),
  Object.freeze({
    name: 'take_id_not_on_disk',
    retireBy: '2027-12-31',
    description: 'A take action named a take with no file in the engine store; it is recorded and flagged.',
  }),
]);
