/**
 * The decision table as one function (spec: "Proposal decisions", Events rules 1-4), row by
 * row, and the take-action and memory-toggle event builders (Events table, rule 5).
 */
import { describe, expect, it } from 'vitest';
import { DecisionValueError, evaluateDecision, evaluateTakeAction, memoryToggleEvent, nextTakeState, type DecisionInput } from '../../src/console/index.js';
import { PROPOSAL_KINDS, type ProposalKind } from '../../src/registry/index.js';

const base: DecisionInput = { proposalId: 'prop_0123456789ab', decision: 'approved', kind: null, wasPending: true, scope: 'engine' };

describe('evaluateDecision: the rows of the decision table', () => {
  it.each([
    ['approved', 'success'],
    ['rejected', 'info'],
    ['deferred', 'info'],
  ] as const)('pending, %s: a %s event and no fallback', (decision, severity) => {
    const out = evaluateDecision({ ...base, decision, kind: 'GenerationProposal', proposalId: 'gen_0123456789ab' }, PROPOSAL_KINDS);
    expect(out.fallback).toBeNull();
    expect(out.event).toEqual({
      severity,
      scope: 'engine',
      summary: `Generate ${decision} (gen_0123456789ab)`,
      detail: null,
      payload: { proposal_id: 'gen_0123456789ab', decision, kind: 'GenerationProposal', deferred_execution: false },
    });
    expect(out.deferredExecution).toBe(false);
  });

  it.each(['approved', 'rejected', 'deferred'] as const)('not pending, %s: severity fallback and the proposal_id_not_pending fallback event', (decision) => {
    const out = evaluateDecision({ ...base, decision, wasPending: false, scope: 'chat/proposals' }, PROPOSAL_KINDS);
    expect(out.event.severity).toBe('fallback');
    expect(out.event.scope).toBe('chat/proposals');
    expect(out.event.summary).toBe(`Proposal ${decision} (prop_0123456789ab)`);
    expect(out.fallback).toEqual({
      name: 'proposal_id_not_pending',
      event: {
        severity: 'fallback',
        scope: 'api/proposals',
        summary: 'proposal_id_not_pending',
        detail: null,
        payload: { proposal_id: 'prop_0123456789ab', decision },
      },
    });
  });
});

describe('evaluateDecision: label and deferred_execution (rules 1 and 2)', () => {
  const noExecutor: ProposalKind = { name: 'ReviewProposal', label: 'Review', executor: null };
  it.each([
    ['GenerationProposal', 'Generate', false],
    ['ReshootProposal', 'ReshootProposal', true],
    [null, 'Proposal', true],
    ['ReviewProposal', 'Review', true],
  ] as const)('kind %s: label %s, deferred_execution %s', (kind, label, deferred) => {
    const out = evaluateDecision({ ...base, kind }, [...PROPOSAL_KINDS, noExecutor]);
    expect(out.label).toBe(label);
    expect(out.deferredExecution).toBe(deferred);
    expect(out.event.summary).toBe(`${label} approved (prop_0123456789ab)`);
    expect(out.event.payload).toEqual({ proposal_id: 'prop_0123456789ab', decision: 'approved', kind, deferred_execution: deferred });
  });
});

describe('evaluateDecision: payload extras and invalid values', () => {
  it('adds the extra members after the four of the spec, which they cannot replace', () => {
    const out = evaluateDecision({ ...base, extra: { reason: 'looks good', decision: 'forged', proposal_id: 'x' } }, PROPOSAL_KINDS);
    expect(out.event.payload).toEqual({ proposal_id: 'prop_0123456789ab', decision: 'approved', kind: null, deferred_execution: true, reason: 'looks good' });
    expect(Object.keys(out.event.payload ?? {})).toEqual(['proposal_id', 'decision', 'kind', 'deferred_execution', 'reason']);
  });

  it.each(['approve', 'APPROVED', '', 'pending'])('throws a ValueError-style DecisionValueError naming the valid values for %j (rule 4)', (decision) => {
    const run = () => evaluateDecision({ ...base, decision }, PROPOSAL_KINDS);
    expect(run).toThrow(DecisionValueError);
    expect(run).toThrow(RangeError);
    expect(run).toThrow(`expected one of approved, rejected, deferred`);
  });
});

describe('evaluateTakeAction and nextTakeState', () => {
  it.each([
    ['marked_primary', 'success', 'Take marked primary: tk_1'],
    ['circled_toggled', 'info', 'Take circled toggled: tk_1'],
    ['rejected', 'info', 'Take rejected: tk_1'],
    ['sent_to_edit', 'info', 'Take sent to edit: tk_1'],
  ] as const)('%s on disk: %s, summary %j', (action, severity, summary) => {
    const out = evaluateTakeAction({ takeId: 'tk_1', action, onDisk: true, scope: 'engine', extra: { by: 'ana', take_id: 'forged' } });
    expect(out).toEqual({
      severity,
      fallback: null,
      event: { severity, scope: 'engine', summary, detail: null, payload: { take_id: 'tk_1', action, by: 'ana' } },
    });
  });

  it('lets the caller override the severity, except for a take not on disk', () => {
    expect(evaluateTakeAction({ takeId: 't', action: 'marked_primary', onDisk: true, severity: 'warning', scope: 'e' }).severity).toBe('warning');
    const off = evaluateTakeAction({ takeId: 't', action: 'marked_primary', onDisk: false, severity: 'warning', scope: 'e' });
    expect(off.severity).toBe('fallback');
    expect(off.event.severity).toBe('fallback');
    expect(off.fallback).toBe('take_id_not_on_disk');
  });

  it('changes the state per action', () => {
    const none = { primary: false, circled: false, rejected: false };
    expect(nextTakeState(none, 'marked_primary')).toEqual({ ...none, primary: true });
    expect(nextTakeState(nextTakeState(none, 'circled_toggled'), 'circled_toggled')).toEqual(none);
    expect(nextTakeState(none, 'circled_toggled')).toEqual({ ...none, circled: true });
    expect(nextTakeState(none, 'rejected')).toEqual({ ...none, rejected: true });
    expect(nextTakeState(none, 'anything_else')).toBe(none);
  });
});

describe('memoryToggleEvent', () => {
  it.each([
    [true, 'Memory entry enabled: style-palette'],
    [false, 'Memory entry disabled: style-palette'],
  ])('on=%s: %s', (on, summary) => {
    expect(memoryToggleEvent('style-palette', on, 'engine/memory', { by: 'ana', on: 'forged' })).toEqual({
      severity: 'info',
      scope: 'engine/memory',
      summary,
      detail: null,
      payload: { entry_id: 'style-palette', on, by: 'ana' },
    });
  });
});
