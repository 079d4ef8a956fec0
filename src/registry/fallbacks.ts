/**
 * The sanctioned-fallback registry (spec: What the service does, item 6). A sanctioned
 * fallback is a degraded path the service is allowed to take while a caller is fixed; each
 * may carry a `retireBy` date after which start-up refuses to run until it is removed.
 */

/** One registered fallback. `retireBy` is an ISO date (`YYYY-MM-DD`, UTC) or null (never). */
export interface SanctionedFallback {
  readonly name: string;
  readonly retireBy: string | null;
  readonly description: string;
}

/** Names of the fallbacks this service raises. */
export type FallbackName = 'proposal_id_not_pending' | 'take_id_not_on_disk';

/**
 * The shipped registry. `take_id_not_on_disk` retires at the end of 2027: by then the
 * console must only act on takes it read from the store. Deciding on a proposal that is no
 * longer pending is a permanent, legitimate race between two operators, so it never retires.
 */
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
