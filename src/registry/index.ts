export { SANCTIONED_FALLBACKS, type SanctionedFallback, type FallbackName } from './fallbacks.js';
export {
  PROPOSAL_KINDS,
  GENERATION_PROPOSAL,
  GENERATION_EXECUTOR,
  type ProposalKind,
  type ExecutorMarker,
} from './proposal-kinds.js';

import { SANCTIONED_FALLBACKS, type SanctionedFallback } from './fallbacks.js';
import { PROPOSAL_KINDS, type ProposalKind } from './proposal-kinds.js';

/** The two registries the start-up guards check; tests inject their own. */
export interface Registries {
  readonly fallbacks: readonly SanctionedFallback[];
  readonly proposalKinds: readonly ProposalKind[];
}

/** The registries the service ships with. */
export const SHIPPED_REGISTRIES: Registries = Object.freeze({
  fallbacks: SANCTIONED_FALLBACKS,
  proposalKinds: PROPOSAL_KINDS,
});
