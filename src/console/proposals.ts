// Proposals and decisions (spec: Proposal decisions; api-decisions.md, "Mutations and lifecycle routes").
// was_pending comes from a conditional UPDATE in the decision's transaction, so exactly one decision finds an id pending.
import { randomBytes } from 'node:crypto';
import type { ProposalKind } from '../registry/index.js';
import type { DecisionRecord, ProposalRecord } from '../state/state-store.js';
import { nowIso } from './now.js';
import type { StateCommitter } from '../state/state-store.js';
import { DecisionValueError, evaluateDecision, isDecision, type Decision } from './decision.js';
import type { FallbackCounter } from './fallbacks.js';

/** Scope of the lifecycle routes' events (spec: partial-shape table, Proposals lifecycle). */
export const LIFECYCLE_SCOPE = 'chat/proposals';

/** Default scope of `POST /api/proposals/{id}/decision` (spec: Events table). */
export const DECISION_SCOPE = 'engine';

export interface DecideRequest {
  readonly proposalId: string;
  /** Checked by the decision table (DecisionValueError outside approved, rejected, deferred). */
  readonly decision: string;
  /** The caller's kind; when absent, the stored proposal's kind (or none) is used. */
  readonly kind?: string;
  readonly scope: string;
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** What a decision did. `wasPending` false means the `proposal_id_not_pending` fallback. */
export interface DecideResult {
  readonly proposalId: string;
  readonly decision: Decision;
  readonly kind: string | null;
  readonly label: string;
  readonly wasPending: boolean;
  readonly deferredExecution: boolean;
  /** Id of the decision event. */
  readonly eventId: string;
}

export class ProposalDesk {
  constructor(
    private readonly state: StateCommitter,
    private readonly fallbacks: FallbackCounter,
    private readonly kinds: readonly ProposalKind[],
  ) {}

  /** Creates a pending proposal `prop_<12 hex>` and emits `Proposal created: <title> (<id>)` (info, scope `chat/proposals`). */
  async create(p: { kind: string | null; title: string; payload: Readonly<Record<string, unknown>> }): Promise<ProposalRecord> {
    const createdAt = nowIso();
    const id = `prop_${randomBytes(6).toString('hex')}`;
    const { result } = await this.state.commit(async (tx) => {
      await tx.proposals.insertPending({ id, kind: p.kind, title: p.title, payload: p.payload, createdAt });
      return {
        result: (await tx.proposals.get(id)) as ProposalRecord,
        events: [
          {
            severity: 'info',
            scope: LIFECYCLE_SCOPE,
            summary: `Proposal created: ${p.title} (${id})`,
            detail: null,
            payload: { proposal_id: id, kind: p.kind, title: p.title },
          },
        ],
      };
    });
    return result;
  }

  /** Stored proposals, newest first. */
  list(status: string | null, limit: number): Promise<ProposalRecord[]> {
    return this.state.store.proposals.list(status, limit);
  }

  /** Every decision recorded for an id, oldest first (fallback ones included). */
  history(proposalId: string): Promise<DecisionRecord[]> {
    return this.state.store.decisions.listFor(proposalId);
  }

  /**
   * Records one decision in one transaction: was_pending, the log row, the fallback when not pending, the events (fallback first).
   * @throws DecisionValueError for a decision value outside approved, rejected, deferred (nothing is recorded).
   */
  async decide(req: DecideRequest): Promise<DecideResult> {
    if (!isDecision(req.decision)) throw new DecisionValueError(req.decision);
    const at = nowIso();
    const { result, events } = await this.state.commit(async (tx) => {
      const stored = await tx.proposals.get(req.proposalId);
      const kind = req.kind ?? stored?.kind ?? null;
      const wasPending = await tx.proposals.markDecided(req.proposalId, req.decision, at);
      const out = evaluateDecision({ ...req, kind, wasPending }, this.kinds);
      await tx.decisions.insert({
        proposalId: req.proposalId,
        decision: out.decision,
        kind,
        label: out.label,
        wasPending,
        deferredExecution: out.deferredExecution,
        severity: out.event.severity,
        scope: req.scope,
        extra: req.extra ?? {},
        decidedAt: at,
      });
      if (out.fallback) await this.fallbacks.raise(tx, out.fallback.name, at);
      return {
        result: { out, kind, wasPending },
        events: out.fallback ? [out.fallback.event, out.event] : [out.event],
      };
    });
    return {
      proposalId: req.proposalId,
      decision: result.out.decision,
      kind: result.kind,
      label: result.out.label,
      wasPending: result.wasPending,
      deferredExecution: result.out.deferredExecution,
      eventId: (events[events.length - 1] as { id: string }).id,
    };
  }
}
