/**
 * Proposals lifecycle and decisions (spec: "Proposal decisions", Events rules 1-4;
 * api-decisions.md, "Mutations and lifecycle routes"). Each write is committed, with its
 * events, before the answer.
 */
import { z } from 'zod';
import { DECISION_SCOPE, LIFECYCLE_SCOPE, type Decision } from '../../console/index.js';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { ErrorBody, PathId, QueryInt } from '../schemas.js';
import { DecisionAnswer, DecisionRecord, DecisionValue, Extra, KindName, Proposal, ProposalStatus, Scope } from './console-schemas.js';
import type { AppDeps } from './deps.js';

const e400 = { description: 'Malformed proposal id.', schema: ErrorBody };
const e422 = { description: 'Validation detail.', schema: ErrorBody };

/** The lifecycle routes and the decision each records. */
const LIFECYCLE: readonly { readonly verb: 'approve' | 'reject' | 'defer'; readonly decision: Decision }[] = [
  { verb: 'approve', decision: 'approved' },
  { verb: 'reject', decision: 'rejected' },
  { verb: 'defer', decision: 'deferred' },
];

const DECISION_RULES =
  'The kind used is the body’s `kind` when given, else the stored proposal’s kind, else none. Label: the registered label (`Generate` for `GenerationProposal`), the kind name when unregistered, `Proposal` when none; `deferredExecution` is true unless the kind is registered with an executor (approval of such a kind records the decision and runs nothing). ' +
  'A pending id (created by `POST /api/proposals` or an accepted generation request, with no decision yet) takes the decision: event severity approved `success`, rejected/deferred `info`, summary `<label> <decision> (<proposal_id>)`, payload proposal_id, decision, kind, deferred_execution and the `extra` members. ' +
  'Any other id (already decided, or unknown) raises the `proposal_id_not_pending` fallback: a `fallback` event in scope `api/proposals` (payload proposal_id, decision), and the decision event with severity `fallback`; the answer is still 200 with ok true. Every decision is recorded.';

export function proposalRoutes(api: Api, { console: state }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/proposals',
    operationId: 'createProposal',
    summary: 'Create a proposal',
    description: 'Stores a pending proposal `prop_<12 hex>` and emits `Proposal created: <title> (<id>)` (info, scope `chat/proposals`, payload proposal_id, kind, title).',
    tag: 'Proposals',
    body: z.object({
      kind: KindName.optional(),
      title: z.string().min(1).max(500),
      payload: z.record(z.string(), z.unknown()).optional().meta({ description: 'Stored with the proposal.' }),
    }),
    answers: {
      201: {
        description: 'Created.',
        schema: z.object({ proposalId: z.string().regex(/^prop_[0-9a-f]{12}$/), status: z.literal('pending') }),
      },
      422: e422,
    },
    handler: async ({ res, body }) => {
      const p = await state.proposals.create({ kind: body.kind ?? null, title: body.title, payload: body.payload ?? {} });
      res.status(201).json({ proposalId: p.id, status: p.status });
    },
  });

  api.route({
    method: 'get',
    path: '/api/proposals',
    operationId: 'listProposals',
    summary: 'List proposals',
    description: 'Stored proposals, newest first: the ones created here and every accepted generation request (`GenerationProposal`).',
    tag: 'Proposals',
    query: z.object({
      status: ProposalStatus.optional().meta({ description: 'Only proposals with this status.' }),
      limit: QueryInt(1, 1000, 200).meta({ description: '1..1000, default 200.' }),
    }),
    answers: { 200: { description: 'Proposals.', schema: z.array(Proposal) }, 422: e422 },
    handler: async ({ res, query }) => {
      res.json(await state.proposals.list(query.status ?? null, query.limit));
    },
  });

  const Params = z.object({ proposalId: PathId('Proposal id') });

  api.route({
    method: 'get',
    path: '/api/proposals/:proposalId/decisions',
    operationId: 'listDecisions',
    summary: 'List the decisions recorded for a proposal id',
    description: 'Every decision on the id, oldest first, fallback ones included (`wasPending` false). An id never decided answers an empty array.',
    tag: 'Proposals',
    params: Params,
    answers: { 200: { description: 'Decisions.', schema: z.array(DecisionRecord) }, 400: e400 },
    handler: async ({ res, params }) => {
      res.json(await state.proposals.history(checkId('proposal_id', params.proposalId)));
    },
  });

  for (const { verb, decision } of LIFECYCLE) {
    api.route({
      method: 'post',
      path: `/api/proposals/:proposalId/${verb}`,
      operationId: `${verb}Proposal`,
      summary: `Record the decision ${decision}`,
      description: `Records \`${decision}\` with the decision event in scope \`chat/proposals\`. ${DECISION_RULES}`,
      tag: 'Proposals',
      params: Params,
      body: z.object({ extra: Extra.optional() }),
      bodyOptional: true,
      answers: { 200: { description: 'Recorded.', schema: DecisionAnswer }, 400: e400, 422: e422 },
      handler: async ({ res, params, body }) => {
        const proposalId = checkId('proposal_id', params.proposalId);
        const r = await state.proposals.decide({ proposalId, decision, scope: LIFECYCLE_SCOPE, ...(body.extra ? { extra: body.extra } : {}) });
        res.json({ ok: true, proposalId, decision: r.decision, deferredExecution: r.deferredExecution });
      },
    });
  }

  api.route({
    method: 'post',
    path: '/api/proposals/:proposalId/decision',
    operationId: 'decideProposal',
    summary: 'Record a decision on a proposal',
    description: `Records \`decision\` with the decision event in \`scope\` (default \`engine\`). A decision value outside approved, rejected, deferred is a 422. ${DECISION_RULES}`,
    tag: 'Proposals',
    params: Params,
    body: z.object({
      decision: DecisionValue,
      kind: KindName.optional(),
      scope: Scope.optional().meta({ description: 'Scope of the decision event, default `engine`.' }),
      extra: Extra.optional(),
    }),
    answers: { 200: { description: 'Recorded.', schema: DecisionAnswer }, 400: e400, 422: e422 },
    handler: async ({ res, params, body }) => {
      const proposalId = checkId('proposal_id', params.proposalId);
      const r = await state.proposals.decide({
        proposalId,
        decision: body.decision,
        scope: body.scope ?? DECISION_SCOPE,
        ...(body.kind !== undefined ? { kind: body.kind } : {}),
        ...(body.extra ? { extra: body.extra } : {}),
      });
      res.json({ ok: true, proposalId, decision: r.decision, deferredExecution: r.deferredExecution });
    },
  });
}
