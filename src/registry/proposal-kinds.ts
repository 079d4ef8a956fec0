/** The proposal-kind registry (spec: Proposal kinds); the executor only names `POST /api/proposals/generate`. */

/** Marker naming the route that executes a kind; nothing is run from the registry itself. */
export interface ExecutorMarker {
  readonly kind: 'endpoint';
  readonly method: 'POST';
  readonly path: string;
}

/** One registered proposal kind. A null executor is a dead kind and fails the start-up guard. */
export interface ProposalKind {
  readonly name: string;
  readonly label: string;
  readonly executor: ExecutorMarker | null;
}

export const GENERATION_PROPOSAL = 'GenerationProposal';

/** The executor marker of `GenerationProposal`. */
export const GENERATION_EXECUTOR: ExecutorMarker = Object.freeze({
  kind: 'endpoint',
  method: 'POST',
  path: '/api/proposals/generate',
});

/** The shipped registry. */
export const PROPOSAL_KINDS: readonly ProposalKind[] = Object.freeze([Object.freeze({ name: GENERATION_PROPOSAL, label: 'Generate', executor: GENERATION_EXECUTOR })]);
