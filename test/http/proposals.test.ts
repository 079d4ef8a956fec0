/**
 * Proposals lifecycle and decisions through the real server (spec: "Proposal kinds",
 * "Proposal decisions", Events rules 1-4 and the decision and fallback rows of the Events
 * table; api-decisions.md, "Mutations and lifecycle routes").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createProposal, eventsAfter, fallbackCounts, mark, send, type Issue } from '../console/helpers.js';
import { waitForJobEvents } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';
import { GENERATION_EXECUTOR, SHIPPED_REGISTRIES } from '../../src/registry/index.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(opts: Parameters<typeof startTestService>[0] = {}): Promise<TestService> {
  t = await startTestService(opts);
  return t;
}

const decide = (svc: TestService, id: string, body: Record<string, unknown>) => send(svc, 'POST', `/api/proposals/${id}/decision`, body);

describe('POST /api/proposals and GET /api/proposals', () => {
  it('creates a pending prop_<12 hex> proposal and emits an info event in chat/proposals', async () => {
    const svc = await start({ store: 'empty' });
    const since = mark(svc);

    const r = await send(svc, 'POST', '/api/proposals', { kind: 'ReshootProposal', title: 'Reshoot sh010', payload: { shot_id: 'sh010' } });

    expect(r.status).toBe(201);
    expect(Object.keys(r.json).sort()).toEqual(['proposalId', 'status']);
    expect(r.json.proposalId).toMatch(/^prop_[0-9a-f]{12}$/);
    expect(r.json.status).toBe('pending');
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      severity: 'info',
      scope: 'chat/proposals',
      summary: `Proposal created: Reshoot sh010 (${r.json.proposalId})`,
      detail: null,
      payload: { proposal_id: r.json.proposalId, kind: 'ReshootProposal', title: 'Reshoot sh010' },
    });
    const list = await send(svc, 'GET', '/api/proposals');
    expect(list.json).toEqual([
      {
        id: r.json.proposalId,
        kind: 'ReshootProposal',
        title: 'Reshoot sh010',
        payload: { shot_id: 'sh010' },
        status: 'pending',
        createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
        decidedAt: null,
      },
    ]);
  });

  it('lists newest first and filters by status', async () => {
    const svc = await start({ store: 'empty' });
    const a = await createProposal(svc, { title: 'a' });
    const b = await createProposal(svc, { title: 'b' });
    const c = await createProposal(svc, { title: 'c' });
    await send(svc, 'POST', `/api/proposals/${b}/approve`);
    await send(svc, 'POST', `/api/proposals/${c}/defer`);

    const ids = async (q: string) => ((await send(svc, 'GET', `/api/proposals${q}`)).json as { id: string }[]).map((p) => p.id);
    expect(await ids('')).toEqual([c, b, a]);
    expect(await ids('?status=pending')).toEqual([a]);
    expect(await ids('?status=approved')).toEqual([b]);
    expect(await ids('?status=deferred')).toEqual([c]);
    expect(await ids('?status=rejected')).toEqual([]);
    expect(await ids('?limit=2')).toEqual([c, b]);
    const approved = (await send(svc, 'GET', '/api/proposals?status=approved')).json[0];
    expect(approved.decidedAt).toEqual(expect.any(String));
    const bad = await send(svc, 'GET', '/api/proposals?status=maybe');
    expect(bad.status).toBe(422);
    expect((bad.json.detail as Issue[])[0]!.loc).toEqual(['query', 'status']);
  });

  it('answers 422 with loc/msg/type for a bad body', async () => {
    const svc = await start({ store: 'empty' });
    const r = await send(svc, 'POST', '/api/proposals', { kind: 3, payload: [] });
    expect(r.status).toBe(422);
    const locs = (r.json.detail as Issue[]).map((i) => i.loc.join('.')).sort();
    expect(locs).toEqual(['body.kind', 'body.payload', 'body.title']);
    expect((r.json.detail as Issue[]).find((i) => i.loc[1] === 'title')).toEqual({ loc: ['body', 'title'], msg: 'Field required', type: 'missing' });
    expect((await send(svc, 'GET', '/api/proposals')).json).toEqual([]);
  });
});

describe('POST /api/proposals/{id}/decision: the decision table', () => {
  it.each([
    ['approved', 'success'],
    ['rejected', 'info'],
    ['deferred', 'info'],
  ] as const)('pending → %s: one %s event in the default scope engine, status updated, ok true', async (decision, severity) => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc, { title: 'x' });
    const since = mark(svc);

    const r = await decide(svc, id, { decision });

    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ok: true, proposalId: id, decision, deferredExecution: true });
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      severity,
      scope: 'engine',
      summary: `Proposal ${decision} (${id})`,
      detail: null,
    });
    expect(events[0]!.payload).toEqual({ proposal_id: id, decision, kind: null, deferred_execution: true });
    expect((await send(svc, 'GET', `/api/proposals?status=${decision}`)).json.map((p: { id: string }) => p.id)).toEqual([id]);
    expect(await fallbackCounts(svc)).toEqual({ proposal_id_not_pending: 0, take_id_not_on_disk: 0 });
  });

  it.each(['approved', 'rejected', 'deferred'] as const)(
    'not pending (already decided) → %s: the fallback event in api/proposals, the decision event with severity fallback, ok true, status kept',
    async (decision) => {
      const svc = await start({ store: 'empty' });
      const id = await createProposal(svc, { title: 'x' });
      await decide(svc, id, { decision: 'rejected' });
      const since = mark(svc);

      const r = await decide(svc, id, { decision, scope: 'engine/review', extra: { by: 'ana' } });

      expect(r.status).toBe(200);
      expect(r.json).toEqual({ ok: true, proposalId: id, decision, deferredExecution: true });
      const events = await eventsAfter(svc, since);
      expect(events.map((e) => [e.severity, e.scope, e.summary])).toEqual([
        ['fallback', 'api/proposals', 'proposal_id_not_pending'],
        ['fallback', 'engine/review', `Proposal ${decision} (${id})`],
      ]);
      expect(events[0]!.payload).toEqual({ proposal_id: id, decision });
      expect(events[0]!.detail).toBeNull();
      expect(events[1]!.payload).toEqual({ proposal_id: id, decision, kind: null, deferred_execution: true, by: 'ana' });
      // The first decision stays the proposal's status.
      expect((await send(svc, 'GET', '/api/proposals')).json[0].status).toBe('rejected');
      expect((await fallbackCounts(svc)).proposal_id_not_pending).toBe(1);
      // Both decisions are recorded.
      const history = (await send(svc, 'GET', `/api/proposals/${id}/decisions`)).json as { decision: string; wasPending: boolean; severity: string }[];
      expect(history.map((d) => [d.decision, d.wasPending, d.severity])).toEqual([
        ['rejected', true, 'info'],
        [decision, false, 'fallback'],
      ]);
    },
  );

  it('an id that was never created is not pending: fallback, ok true, recorded', async () => {
    const svc = await start({ store: 'empty' });
    const since = mark(svc);

    const r = await decide(svc, 'prop_000000000000', { decision: 'approved' });

    expect(r.json).toEqual({ ok: true, proposalId: 'prop_000000000000', decision: 'approved', deferredExecution: true });
    const events = await eventsAfter(svc, since);
    expect(events.map((e) => e.severity)).toEqual(['fallback', 'fallback']);
    expect(events[1]!.summary).toBe('Proposal approved (prop_000000000000)');
    expect((await send(svc, 'GET', '/api/proposals/prop_000000000000/decisions')).json).toEqual([
      expect.objectContaining({ proposalId: 'prop_000000000000', decision: 'approved', wasPending: false, kind: null, label: 'Proposal' }),
    ]);
    expect((await send(svc, 'GET', '/api/proposals')).json).toEqual([]);
  });

  it('a deferred proposal is no longer pending: a later approval is the fallback', async () => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc);
    await send(svc, 'POST', `/api/proposals/${id}/defer`);
    const since = mark(svc);
    await send(svc, 'POST', `/api/proposals/${id}/approve`);
    expect((await eventsAfter(svc, since)).map((e) => e.severity)).toEqual(['fallback', 'fallback']);
  });

  it('labels: the body kind wins, else the stored kind, else Proposal; unregistered kinds defer execution', async () => {
    const svc = await start({ store: 'empty' });
    const stored = await createProposal(svc, { title: 'x', kind: 'ReshootProposal' });
    const none = await createProposal(svc, { title: 'y' });
    const overridden = await createProposal(svc, { title: 'z', kind: 'ReshootProposal' });
    const since = mark(svc);

    const a = await decide(svc, stored, { decision: 'approved' });
    const b = await decide(svc, none, { decision: 'approved' });
    const c = await decide(svc, overridden, { decision: 'approved', kind: 'GenerationProposal' });

    expect([a.json.deferredExecution, b.json.deferredExecution, c.json.deferredExecution]).toEqual([true, true, false]);
    const events = await eventsAfter(svc, since);
    expect(events.map((e) => e.summary)).toEqual([`ReshootProposal approved (${stored})`, `Proposal approved (${none})`, `Generate approved (${overridden})`]);
    expect(events.map((e) => e.payload.kind)).toEqual(['ReshootProposal', null, 'GenerationProposal']);
    expect(events.map((e) => e.payload.deferred_execution)).toEqual([true, true, false]);
    expect(events.map((e) => e.severity)).toEqual(['success', 'success', 'success']);
  });

  it('uses the registered label of any registered kind (injected registry)', async () => {
    const reshoot = { name: 'ReshootProposal', label: 'Reshoot', executor: GENERATION_EXECUTOR };
    const svc = await start({ store: 'empty', registries: { ...SHIPPED_REGISTRIES, proposalKinds: [...SHIPPED_REGISTRIES.proposalKinds, reshoot] } });
    const id = await createProposal(svc, { title: 'x', kind: 'ReshootProposal' });
    const since = mark(svc);
    const r = await send(svc, 'POST', `/api/proposals/${id}/reject`);
    expect(r.json.deferredExecution).toBe(false);
    expect((await eventsAfter(svc, since))[0]).toMatchObject({ severity: 'info', summary: `Reshoot rejected (${id})` });
  });

  it('answers 422 for a decision value outside approved, rejected, deferred, and records nothing', async () => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc);
    const since = mark(svc);
    for (const decision of ['approve', 'pending', 1, null]) {
      const r = await decide(svc, id, { decision });
      expect(r.status).toBe(422);
      expect((r.json.detail as Issue[])[0]).toMatchObject({ loc: ['body', 'decision'] });
    }
    const missing = await decide(svc, id, {});
    expect(missing.status).toBe(422);
    expect((missing.json.detail as Issue[])[0]).toMatchObject({ loc: ['body', 'decision'], msg: 'Field required', type: 'missing' });
    expect(((await decide(svc, id, { decision: 'nope' })).json.detail as Issue[])[0]).toMatchObject({ type: 'enum' });
    expect((await decide(svc, id, { decision: 'approved', extra: 'x' })).status).toBe(422);
    for (const scope of ['../x', 'a//b', '/engine', '', 'engine/']) {
      expect((await decide(svc, id, { decision: 'approved', scope })).status, scope).toBe(422);
    }
    expect(await eventsAfter(svc, since)).toEqual([]);
    expect((await send(svc, 'GET', `/api/proposals/${id}/decisions`)).json).toEqual([]);
    expect((await send(svc, 'GET', '/api/proposals')).json[0].status).toBe('pending');
  });

  it('answers 400 for a malformed proposal id on every decision route', async () => {
    const svc = await start({ store: 'empty' });
    for (const route of ['decision', 'approve', 'reject', 'defer', 'decisions']) {
      const r = await send(svc, route === 'decisions' ? 'GET' : 'POST', `/api/proposals/bad%20id/${route}`, route === 'decision' ? { decision: 'approved' } : undefined);
      expect(r.status, route).toBe(400);
      expect(r.json.detail).toMatch(/^invalid proposal_id "bad id"/);
    }
  });
});

describe('approve, reject, defer: the lifecycle routes', () => {
  it.each([
    ['approve', 'approved', 'success'],
    ['reject', 'rejected', 'info'],
    ['defer', 'deferred', 'info'],
  ] as const)('%s records %s with a %s event in scope chat/proposals, extra members included', async (verb, decision, severity) => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc, { title: 'x', kind: 'NoteProposal' });
    const since = mark(svc);

    const r = await send(svc, 'POST', `/api/proposals/${id}/${verb}`, { extra: { by: 'ana', note: 'ok' } });

    expect(r.status).toBe(200);
    expect(r.json).toEqual({ ok: true, proposalId: id, decision, deferredExecution: true });
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({ severity, scope: 'chat/proposals', summary: `NoteProposal ${decision} (${id})`, detail: null });
    expect(events[0]!.payload).toEqual({ proposal_id: id, decision, kind: 'NoteProposal', deferred_execution: true, by: 'ana', note: 'ok' });
  });

  it('accepts no body at all', async () => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc);
    const res = await fetch(`${svc.url}/api/proposals/${id}/approve`, { method: 'POST' });
    expect(res.status).toBe(200);
  });
});

describe('a generation request’s gen_ id', () => {
  it('is a pending GenerationProposal: approval says Generate, deferredExecution false, and starts nothing', async () => {
    const svc = await start({ env: { DISPATCH_CLI: fixture('print-lines.mjs') } });
    const gen = await send(svc, 'POST', '/api/proposals/generate', { project: 'harbor-lights' });
    expect(gen.status).toBe(202);
    const id = gen.json.proposalId as string;
    await waitForJobEvents(svc.url, id);
    expect((await send(svc, 'GET', '/api/proposals?status=pending')).json).toEqual([expect.objectContaining({ id, kind: 'GenerationProposal', status: 'pending' })]);
    const since = mark(svc);

    const r = await send(svc, 'POST', `/api/proposals/${id}/approve`);

    expect(r.json).toEqual({ ok: true, proposalId: id, decision: 'approved', deferredExecution: false });
    const events = await eventsAfter(svc, since);
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      severity: 'success',
      scope: 'chat/proposals',
      summary: `Generate approved (${id})`,
      payload: { proposal_id: id, decision: 'approved', kind: 'GenerationProposal', deferred_execution: false },
    });
    expect((await send(svc, 'GET', '/api/jobs')).json).toHaveLength(1);
  });
});

describe('concurrent decisions on one pending id', () => {
  it('exactly one finds it pending; every other one is the fallback; all answer ok true and all are recorded', async () => {
    const svc = await start({ store: 'empty' });
    const id = await createProposal(svc);
    const since = mark(svc);
    const N = 60;
    const verbs = ['approve', 'reject', 'defer'];

    const answers = await Promise.all(
      Array.from({ length: N }, (_, i) =>
        i % 2 === 0 ? send(svc, 'POST', `/api/proposals/${id}/${verbs[i % 3]}`) : decide(svc, id, { decision: ['approved', 'rejected', 'deferred'][i % 3], extra: { i } }),
      ),
    );

    expect(answers.every((a) => a.status === 200 && a.json.ok === true)).toBe(true);
    const events = await eventsAfter(svc, since);
    const decisions = events.filter((e) => e.scope !== 'api/proposals');
    expect(decisions).toHaveLength(N);
    const winners = decisions.filter((e) => e.severity !== 'fallback');
    expect(winners).toHaveLength(1);
    expect(events.filter((e) => e.scope === 'api/proposals')).toHaveLength(N - 1);
    const history = (await send(svc, 'GET', `/api/proposals/${id}/decisions`)).json as { wasPending: boolean; decision: string }[];
    expect(history).toHaveLength(N);
    expect(history.filter((d) => d.wasPending)).toHaveLength(1);
    const status = (await send(svc, 'GET', '/api/proposals')).json[0].status;
    expect(status).toBe(winners[0]!.payload.decision);
    expect(history.find((d) => d.wasPending)!.decision).toBe(status);
    expect((await fallbackCounts(svc)).proposal_id_not_pending).toBe(N - 1);
  });
});
