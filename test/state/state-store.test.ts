/**
 * The state store's behaviour, one test file run against both back ends:
 * SQLite (a temp file) and PostgreSQL (a real server started by the test, a fresh database per
 * test). A second store opened on one database stands for a second instance: on PostgreSQL it
 * has its own pool, so its transactions interleave with the first's; SQLite has one instance.
 */
import Database from '../../src/state/sqlite/binding.js';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NO_FILTER, type Severity } from '../../src/bus/event.js';
import { answerOf } from '../../src/http/errors.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';
import { MIGRATIONS } from '../../src/state/sqlite/migrations/index.js';
import { openPgStateStore } from '../../src/state/pg/pg-state-store.js';
import { PG_SCHEMA_VERSION } from '../../src/state/pg/schema.js';
import type { EventDraft, NewJob, StateStore } from '../../src/state/state-store.js';
import { postgresBackend, sqliteBackend, type Backend, type TestDb } from '../helpers/state-backends.js';

/** ISO time `n` seconds into a fixed day. */
const T = (n: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString();

const draft = (i: number, severity: Severity = 'info', scope = 'test/store'): EventDraft => ({
  ts: T(i % 60),
  severity,
  scope,
  summary: `e${i}`,
  detail: i % 2 === 0 ? null : `detail ${i}`,
  payload: { i },
});

const job = (proposalId: string, instanceId: string, at: number): NewJob => ({
  proposalId,
  projectId: 'p1',
  pid: 1000 + at,
  argv: ['node', 'dispatch.mjs', proposalId],
  state: 'running',
  startedAt: T(at),
  instanceId,
});

/** Resolves once `n` callers arrived (so their transactions are all open at once). */
function barrier(n: number): () => Promise<void> {
  let arrived = 0;
  let release!: () => void;
  const all = new Promise<void>((r) => (release = r));
  return () => {
    if (++arrived >= n) release();
    return all;
  };
}

const ids = (rows: readonly ({ id: number | string } | null)[]) => rows.map((r) => Number(r?.id));

const pg = postgresBackend();
const backends: Backend[] = [sqliteBackend(), pg];
// One PostgreSQL server for the whole file (both describes).
beforeAll(() => Promise.all(backends.map((b) => b.start())), 180_000);
afterAll(() => Promise.all(backends.map((b) => b.stop())));

describe.each(backends)('state store on $name', (backend) => {
  let db: TestDb;
  beforeEach(async () => {
    db = await backend.fresh();
  });
  afterEach(() => db.close());

  it('proposals and decisions: insert, read, list newest first, decide once', async () => {
    const s = await db.open();
    await s.proposals.insertPending({ id: 'prop_a', kind: 'k', title: 'A', payload: { n: 1 }, createdAt: T(1) });
    await s.proposals.insertPending({ id: 'prop_b', kind: null, title: null, payload: {}, createdAt: T(2) });
    expect(await s.proposals.get('prop_a')).toEqual({ id: 'prop_a', kind: 'k', title: 'A', payload: { n: 1 }, status: 'pending', createdAt: T(1), decidedAt: null });
    expect(await s.proposals.get('prop_zz')).toBeUndefined();
    expect(ids2(await s.proposals.list(null, 10))).toEqual(['prop_b', 'prop_a']);
    expect(ids2(await s.proposals.list(null, 1))).toEqual(['prop_b']);
    expect(await s.proposals.markDecided('prop_a', 'approved', T(3))).toBe(true);
    expect(await s.proposals.markDecided('prop_a', 'rejected', T(4))).toBe(false);
    expect(await s.proposals.markDecided('prop_zz', 'rejected', T(4))).toBe(false);
    expect(await s.proposals.list('approved', 10)).toEqual([expect.objectContaining({ id: 'prop_a', status: 'approved', decidedAt: T(3) })]);
    expect(ids2(await s.proposals.list('pending', 10))).toEqual(['prop_b']);

    const d = {
      proposalId: 'prop_a',
      decision: 'approved',
      kind: 'k',
      label: 'K',
      wasPending: true,
      deferredExecution: false,
      severity: 'success',
      scope: 'engine',
      extra: { why: 'x' },
      decidedAt: T(3),
    };
    const first = await s.decisions.insert(d);
    const second = await s.decisions.insert({ ...d, decision: 'rejected', wasPending: false, severity: 'fallback', extra: {} });
    expect(second).toBeGreaterThan(first);
    expect(await s.decisions.listFor('prop_a')).toEqual([
      { ...d, id: first },
      { ...d, id: second, decision: 'rejected', wasPending: false, severity: 'fallback', extra: {} },
    ]);
    expect(await s.decisions.listFor('prop_b')).toEqual([]);
  });

  it('fallback counts, memory toggles (last and log), take states and their action log', async () => {
    const s = await db.open();
    await s.fallbacks.increment('a', T(1));
    await s.fallbacks.increment('a', T(2));
    await s.fallbacks.increment('b', T(2));
    expect(await s.fallbacks.all()).toEqual(
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );

    await s.memoryToggles.record({ entryId: 'e1', on: true, scope: 'engine/memory', extra: {}, at: T(1) });
    await s.memoryToggles.record({ entryId: 'e1', on: false, scope: 'engine/memory', extra: { by: 'me' }, at: T(2) });
    await s.memoryToggles.record({ entryId: 'e2', on: true, scope: 'engine/memory', extra: {}, at: T(3) });
    expect(await s.memoryToggles.all()).toEqual(
      new Map([
        ['e1', false],
        ['e2', true],
      ]),
    );
    expect(await db.count('memory_toggle_log')).toBe(3);
    // Each write of an entry's row moves its version (what a mirror compares).
    expect((await s.memoryToggles.list()).sort((x, y) => x.entryId.localeCompare(y.entryId))).toEqual([
      { entryId: 'e1', on: false, version: 2 },
      { entryId: 'e2', on: true, version: 1 },
    ]);

    const base = { projectId: 'p1', circled: false, rejected: false };
    await s.takeStates.upsert({ ...base, takeId: 't1', shotId: 's1', primary: true }, T(1));
    await s.takeStates.upsert({ ...base, takeId: 't2', shotId: 's1', primary: false, circled: true }, T(2));
    // One primary per shot, kept by the database.
    await expect(s.takeStates.upsert({ ...base, takeId: 't2', shotId: 's1', primary: true, circled: true }, T(3))).rejects.toThrow();
    expect((await s.takeStates.clearOtherPrimaries('p1', 's1', 't2', T(3))).map((r) => [r.takeId, r.primary, r.version])).toEqual([['t1', false, 2]]);
    expect(await s.takeStates.clearOtherPrimaries('p1', 's1', 't2', T(3))).toEqual([]);
    await s.takeStates.upsert({ ...base, takeId: 't2', shotId: 's1', primary: true, circled: true }, T(3));
    // A take keeps its first shot unless marked primary, when the file's shot wins.
    await s.takeStates.upsert({ ...base, takeId: 't1', shotId: 's9', primary: false, rejected: true }, T(4));
    await s.takeStates.upsert({ ...base, takeId: 't3', shotId: 's2', primary: false }, T(4));
    await s.takeStates.upsert({ ...base, takeId: 't3', shotId: 's3', primary: true }, T(5));
    const all = (await s.takeStates.all()).sort((x, y) => x.takeId.localeCompare(y.takeId));
    expect(all).toEqual([
      { ...base, takeId: 't1', shotId: 's1', primary: false, rejected: true, version: 3 },
      { ...base, takeId: 't2', shotId: 's1', primary: true, circled: true, version: 2 },
      { ...base, takeId: 't3', shotId: 's3', primary: true, version: 2 },
    ]);
    // lock: the row as committed, a blank one recorded first for a take that has none.
    expect(await s.transaction((tx) => tx.takeStates.lock('p1', 't2', 's1', true, T(6)))).toEqual({ ...base, takeId: 't2', shotId: 's1', primary: true, circled: true, version: 2 });
    expect(await s.transaction((tx) => tx.takeStates.lock('p1', 't4', 's4', false, T(6)))).toEqual({ ...base, takeId: 't4', shotId: 's4', primary: false, version: 1 });
    await s.takeStates.logAction({ projectId: 'p1', takeId: 't2', action: 'marked_primary', severity: 'success', onDisk: true, scope: 'engine', extra: {}, actedAt: T(3) });
    expect(await db.count('take_actions')).toBe(1);
  });

  it('selection and recent items: put, get, move to front, prune to the bound', async () => {
    const s = await db.open();
    await s.selection.put({ projectId: 'p1', selection: { takeId: 't1' }, updatedAt: T(1) });
    await s.selection.put({ projectId: 'p1', selection: { shotId: 's1' }, updatedAt: T(2) });
    expect(await s.selection.get('p1')).toEqual({ projectId: 'p1', selection: { shotId: 's1' }, updatedAt: T(2) });
    expect(await s.selection.get('p9')).toBeUndefined();
    for (const [i, p] of ['p1', 'p2', 'p3'].entries()) await s.selection.touch({ projectId: p, kind: 'project', itemId: p, openedAt: T(i) }, 2);
    expect((await s.selection.recent(10)).projects.map((r) => r.itemId)).toEqual(['p3', 'p2']);
    await s.selection.touch({ projectId: 'p2', kind: 'project', itemId: 'p2', openedAt: T(9) }, 2);
    await s.selection.touch({ projectId: 'p1', kind: 'take', itemId: 't1', openedAt: T(9) }, 2);
    const recent = await s.selection.recent(1);
    expect(recent).toEqual({ projects: [{ projectId: 'p2', kind: 'project', itemId: 'p2', openedAt: T(9) }], items: [{ projectId: 'p1', kind: 'take', itemId: 't1', openedAt: T(9) }] });
  });

  it('workspace: revisions, conflicts, reports pruned to the newest kept', async () => {
    const s = await db.open();
    expect(await s.workspace.get('w')).toBeUndefined();
    expect(await s.workspace.put('w', 0, { a: 1 }, T(1))).toEqual({ ok: true, record: { wid: 'w', revision: 1, state: { a: 1 }, updatedAt: T(1) } });
    expect(await s.workspace.put('w', 0, { a: 9 }, T(2))).toEqual({ ok: false, currentRevision: 1 });
    expect(await s.workspace.put('w', 1, [2], T(2))).toEqual({ ok: true, record: { wid: 'w', revision: 2, state: [2], updatedAt: T(2) } });
    expect(await s.workspace.put('w', 5, {}, T(3))).toEqual({ ok: false, currentRevision: 2 });
    expect(await s.workspace.put('other', 3, {}, T(3))).toEqual({ ok: false, currentRevision: 0 });
    expect(await s.workspace.get('w')).toEqual({ wid: 'w', revision: 2, state: [2], updatedAt: T(2) });

    expect(s.workspace.reportsKept).toBe(2);
    const r1 = await s.workspace.addReport('w', '{"x":1}', 'bad', T(1));
    const r2 = await s.workspace.addReport('w', '"é"', null, T(2));
    const r3 = await s.workspace.addReport('w', '[]', 'again', T(3));
    expect([r2 > r1, r3 > r2]).toEqual([true, true]);
    expect(await s.workspace.reports('w', 10)).toEqual([
      { id: r3, wid: 'w', reason: 'again', blob: [], bytes: 2, receivedAt: T(3) },
      { id: r2, wid: 'w', reason: null, blob: 'é', bytes: 4, receivedAt: T(2) },
    ]);
  });

  it('clicks: a ring per project and a bound on all, oldest out first', async () => {
    const s = await db.open();
    expect([s.clicks.ringSize, s.clicks.maxTotal]).toEqual([3, 5]);
    const first = await s.clicks.append({ projectId: 'p1', target: 'btn', x: 1.5, y: null, meta: { k: 'v' }, clickedAt: T(0) });
    expect(first).toEqual({ id: first.id, projectId: 'p1', target: 'btn', x: 1.5, y: null, meta: { k: 'v' }, clickedAt: T(0) });
    for (let i = 1; i < 4; i++) await s.clicks.append({ projectId: 'p1', target: `t${i}`, x: null, y: null, meta: null, clickedAt: T(i) });
    expect((await s.clicks.list('p1', 10)).map((c) => c.target)).toEqual(['t3', 't2', 't1']);
    expect(await s.clicks.size()).toBe(3);
    for (let i = 0; i < 3; i++) await s.clicks.append({ projectId: 'p2', target: `u${i}`, x: null, y: null, meta: null, clickedAt: T(10 + i) });
    expect(await s.clicks.size()).toBe(5);
    expect((await s.clicks.list(null, 10)).map((c) => c.target)).toEqual(['u2', 'u1', 'u0', 't3', 't2']);
    expect((await s.clicks.list(null, 2)).map((c) => c.target)).toEqual(['u2', 'u1']);
    expect(await db.count('clicks')).toBe(5);
  });

  it('jobs: insert with the instance, finish, cancel flag, lists, counts, lost, prune', async () => {
    const s = await db.open();
    await s.jobs.insert(job('gen_1', 'a', 1));
    await s.jobs.insert(job('gen_2', 'b', 2));
    await s.jobs.insert(job('gen_3', 'a', 3));
    expect(await s.jobs.get('gen_1')).toEqual({
      ...job('gen_1', 'a', 1),
      endedAt: null,
      rc: null,
      signal: null,
      stdoutLines: 0,
      stderrLines: 0,
      cancelRequested: false,
      exitReason: null,
      exitDetail: null,
    });
    expect(await s.jobs.get('gen_9')).toBeUndefined();
    expect(ids2p(await s.jobs.list(10))).toEqual(['gen_3', 'gen_2', 'gen_1']);
    expect(ids2p(await s.jobs.running('a')).sort()).toEqual(['gen_1', 'gen_3']);
    expect(await s.jobs.running()).toHaveLength(3);
    await s.jobs.finish('gen_2', { state: 'exited ok', endedAt: T(5), rc: 0, signal: null, stdoutLines: 7, stderrLines: 1, exitReason: 'exited', exitDetail: null });
    expect(await s.jobs.get('gen_2')).toEqual(expect.objectContaining({ state: 'exited ok', endedAt: T(5), rc: 0, stdoutLines: 7, stderrLines: 1, instanceId: 'b', exitReason: 'exited' }));
    expect(await s.jobs.countsByState()).toEqual({ running: 2, 'exited ok': 1 });
    // The supervisor counts its ending jobs itself: they are left out here (one, two, or one unknown).
    expect(await s.jobs.countsByState(['gen_1'])).toEqual({ running: 1, 'exited ok': 1 });
    expect(await s.jobs.countsByState(['gen_2', 'gen_3'])).toEqual({ running: 1 });
    expect(await s.jobs.countsByState(['gen_404'])).toEqual({ running: 2, 'exited ok': 1 });
    expect(ids2p(await s.jobs.list(10, 'exited ok'))).toEqual(['gen_2']);
    await s.jobs.markCancelRequested('gen_1');
    expect((await s.jobs.get('gen_1'))?.cancelRequested).toBe(true);
    const lost = await s.jobs.markLost('a', T(9));
    expect(lost.map((j) => [j.proposalId, j.state, j.endedAt, j.instanceId, j.exitReason]).sort()).toEqual([
      ['gen_1', 'lost', T(9), 'a', 'lost'],
      ['gen_3', 'lost', T(9), 'a', 'lost'],
    ]);
    expect(await s.jobs.markLost('a', T(10))).toEqual([]);
    expect(ids2p(await s.jobs.lostSince('a', T(0))).sort()).toEqual(['gen_1', 'gen_3']);
    expect(await s.jobs.lostSince('b', T(0))).toEqual([]);
    expect(await s.jobs.running()).toEqual([]);
    expect(await s.jobs.prune(1)).toBe(2);
    expect(ids2p(await s.jobs.list(10))).toEqual(['gen_3']);
  });

  it('instances and terminals: register, heartbeat, prune; record, end, end all of an instance', async () => {
    const s = await db.open();
    await s.instances.register({ id: 'b', address: 'http://h2:8000', version: '2.0.0', startedAt: T(1) });
    await s.instances.register({ id: 'a', address: 'http://h1:8000', version: '2.0.0', startedAt: T(1) });
    expect(await s.instances.heartbeat('a', T(5), 3)).toBe(true);
    expect(await s.instances.heartbeat('zz', T(5), 0)).toBe(false);
    expect(await s.instances.get('a')).toEqual({ id: 'a', address: 'http://h1:8000', version: '2.0.0', startedAt: T(1), heartbeatAt: T(5), streamClients: 3 });
    expect((await s.instances.list()).map((i) => i.id)).toEqual(['a', 'b']);
    expect(await s.instances.prune(T(3))).toBe(1);
    expect(await s.instances.list()).toEqual([expect.objectContaining({ id: 'a' })]);
    await s.instances.register({ id: 'a', address: 'http://h1:8001', version: '2.1.0', startedAt: T(7) });
    expect(await s.instances.get('a')).toEqual({ id: 'a', address: 'http://h1:8001', version: '2.1.0', startedAt: T(7), heartbeatAt: T(7), streamClients: 0 });
    expect(await s.instances.get('b')).toBeUndefined();

    const term = (projectId: string, instanceId: string) => ({
      projectId,
      instanceId,
      pid: 42,
      port: 7681,
      url: 'http://h1:7681/',
      state: 'running',
      startedAt: T(1),
      endedAt: null,
      rc: null,
      signal: null,
    });
    for (const [p, i] of [
      ['p2', 'a'],
      ['p1', 'a'],
      ['p3', 'b'],
    ] as const)
      await s.terminals.put(term(p, i));
    expect(await s.terminals.get('p1')).toEqual(term('p1', 'a'));
    expect(await s.terminals.get('p9')).toBeUndefined();
    expect(await s.terminals.end('p1', { state: 'stopped', endedAt: T(2), rc: 143, signal: 'SIGTERM' })).toBe(true);
    expect(await s.terminals.end('p1', { state: 'stopped', endedAt: T(3), rc: null, signal: null })).toBe(false);
    expect(await s.terminals.endAllOf('a', 'exited', T(4))).toEqual([{ ...term('p2', 'a'), state: 'exited', endedAt: T(4) }]);
    expect((await s.terminals.list()).map((t) => [t.projectId, t.state, t.endedAt])).toEqual([
      ['p1', 'stopped', T(2)],
      ['p2', 'exited', T(4)],
      ['p3', 'running', null],
    ]);
    await s.terminals.put(term('p1', 'b'));
    expect(await s.terminals.get('p1')).toEqual(term('p1', 'b'));
  });

  it('events: ids assigned in order, the served JSON stored, reads with filters, last id and count', async () => {
    const s = await db.open();
    expect(await s.events.lastId()).toBe(0);
    expect(await s.events.append([])).toEqual([]);
    const made = await s.events.append([draft(1), draft(2, 'warning', 'engine/gen'), draft(3, 'info', 'éq/x'), draft(4, 'warning', 'engine'), draft(5)]);
    const n = ids(made);
    expect(n.every((id, i) => i === 0 || id > (n[i - 1] as number))).toBe(true);
    expect(made[1]).toEqual({ id: made[1]?.id, ts: T(2), severity: 'warning', scope: 'engine/gen', summary: 'e2', detail: null, payload: { i: 2 } });
    const rows = await s.events.after(0, 10, NO_FILTER);
    expect(rows.map((r) => JSON.parse(r.data))).toEqual(made);
    // PostgreSQL's rows also say which proposal they are about (its bus filters live rows by it).
    expect(rows[1]).toMatchObject({ id: n[1], severity: 'warning', scope: 'engine/gen', data: JSON.stringify(made[1]) });
    expect([undefined, null]).toContain(rows[1]?.proposalId);
    expect(ids(await s.events.after(n[1] as number, 2, NO_FILTER))).toEqual(n.slice(2, 4));
    expect(ids(await s.events.after(0, 10, NO_FILTER, n[2]))).toEqual(n.slice(0, 3));
    expect(ids(await s.events.newest(2, NO_FILTER))).toEqual(n.slice(3));
    expect(ids(await s.events.after(0, 10, { severities: ['warning', 'warning'], scopePrefix: null }))).toEqual([n[1], n[3]]);
    expect(ids(await s.events.newest(10, { severities: null, scopePrefix: 'engine/' }))).toEqual([n[1]]);
    expect(ids(await s.events.after(0, 10, { severities: ['info'], scopePrefix: 'éq' }))).toEqual([n[2]]);
    expect(await s.events.lastId()).toBe(n[4]);
    expect(await s.events.count()).toBe(5);
    // The proposal an event is about: its payload's proposal_id, or the draft's own.
    const about = await s.events.append([
      { ...draft(6), payload: { proposal_id: 'gen_000000000001' } },
      { ...draft(7), proposalId: 'gen_000000000001' },
      { ...draft(8), payload: { proposal_id: 'gen_000000000002' } },
    ]);
    const proposal1 = { severities: null, scopePrefix: null, proposalId: 'gen_000000000001' };
    expect(ids(await s.events.after(0, 10, proposal1))).toEqual(ids(about).slice(0, 2));
    expect(ids(await s.events.newest(1, proposal1))).toEqual(ids(about).slice(1, 2));
  });

  it('a scope prefix matches literally: its % and _ and \\ are no wildcards', async () => {
    const s = await db.open();
    const scopes = ['a_b/x', 'axb/y', 'a%c/z', 'abc/w', 'a\\b/v', 'a_b'];
    await s.events.append(scopes.map((scope, i) => ({ ...draft(i), scope })));
    const by = async (scopePrefix: string) => (await s.events.after(0, 100, { severities: null, scopePrefix })).map((r) => r.scope);
    expect(await by('a_b')).toEqual(['a_b/x', 'a_b']);
    expect(await by('a%')).toEqual(['a%c/z']);
    expect(await by('a\\')).toEqual(['a\\b/v']);
    expect((await s.events.newest(10, { severities: null, scopePrefix: 'a_' })).map((r) => r.scope)).toEqual(['a_b/x', 'a_b']);
  });

  it('a write and its events commit together; a failure inside the transaction stores neither', async () => {
    const s = await db.open();
    const committed = await s.transaction(async (tx) => {
      await tx.proposals.insertPending({ id: 'prop_ok', kind: null, title: 't', payload: {}, createdAt: T(1) });
      return tx.events.append([draft(1)]);
    });
    expect((await s.proposals.get('prop_ok'))?.status).toBe('pending');
    expect(ids(await s.events.after(0, 10, NO_FILTER))).toEqual(ids(committed));

    let leaked: Awaited<Parameters<Parameters<StateStore['transaction']>[0]>[0]> | undefined;
    await expect(
      s.transaction(async (tx) => {
        leaked = tx;
        await tx.proposals.insertPending({ id: 'prop_no', kind: null, title: 't', payload: {}, createdAt: T(2) });
        await tx.events.append([draft(2), draft(3)]);
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    // A failure of the database itself (a duplicate id) rolls back what came before it too.
    await expect(
      s.transaction(async (tx) => {
        await tx.memoryToggles.record({ entryId: 'e1', on: true, scope: 's', extra: {}, at: T(3) });
        await tx.events.append([draft(4)]);
        await tx.proposals.insertPending({ id: 'prop_ok', kind: null, title: 'dup', payload: {}, createdAt: T(3) });
      }),
    ).rejects.toThrow();
    expect(await s.proposals.get('prop_no')).toBeUndefined();
    expect(await s.memoryToggles.all()).toEqual(new Map());
    expect(await db.count('memory_toggle_log')).toBe(0);
    expect(ids(await s.events.after(0, 10, NO_FILTER))).toEqual(ids(committed));
    expect(await s.events.count()).toBe(1);
    await expect(leaked?.proposals.get('prop_ok')).rejects.toThrow(/after it ended/);

    const next = await s.events.append([draft(5)]);
    expect(Number(next[0]?.id)).toBeGreaterThan(Number(committed[0]?.id));
    expect(await s.events.lastId()).toBe(Number(next[0]?.id));
  });

  it('event ids: strictly increasing in commit order with concurrent writers; a reader that saw id N saw all below', async () => {
    const a = await db.open();
    const b = await db.open();
    let writing = true;
    const seen: string[] = [];
    const reader = (async () => {
      while (writing) {
        const got = ids(await a.events.after(0, 100_000, NO_FILTER));
        // No hole below the newest id read: ids are contiguous here (no transaction rolls back).
        if (got.some((id, i) => i > 0 && id !== (got[i - 1] as number) + 1)) seen.push(got.join(','));
        await new Promise((r) => setImmediate(r));
      }
    })();
    const writer = async (s: StateStore, tag: string) => {
      const mine: number[] = [];
      for (let i = 0; i < 15; i++) {
        const evs = await s.transaction(async (tx) => {
          await tx.proposals.insertPending({ id: `prop_${tag}_${i}`, kind: null, title: tag, payload: {}, createdAt: T(i) });
          await new Promise((r) => setImmediate(r));
          return tx.events.append([draft(i), draft(i + 1)]);
        });
        mine.push(...ids(evs));
      }
      return mine;
    };
    const results = await Promise.all([writer(a, 'a1'), writer(b, 'b1'), writer(a, 'a2'), writer(b, 'b2')]);
    writing = false;
    await reader;
    expect(seen).toEqual([]);
    for (const mine of results) expect(mine.every((id, i) => i === 0 || id > (mine[i - 1] as number))).toBe(true);
    const all = results.flat().sort((x, y) => x - y);
    expect(new Set(all).size).toBe(120);
    expect(ids(await b.events.after(0, 1000, NO_FILTER))).toEqual(all);
    expect(await b.events.lastId()).toBe(all.at(-1));
  });

  it('retention: the newest events kept, at most a segment more, as a contiguous tail', async () => {
    const s = await db.open({ eventRetention: 100 });
    expect(s.events.retention).toBe(100);
    let last = 0;
    for (let batch = 0; batch < 40; batch++) {
      const made = await s.events.append(Array.from({ length: 25 }, (_, i) => draft(batch * 25 + i)));
      last = Number(made.at(-1)?.id);
      const kept = ids(await s.events.after(0, 1000, NO_FILTER));
      // retention + one segment (100 for a bound of 100).
      expect(kept.length).toBeLessThanOrEqual(200);
      expect(kept.at(-1)).toBe(last);
      expect(kept.every((id, i) => i === 0 || id === (kept[i - 1] as number) + 1)).toBe(true);
    }
    expect(await s.events.count()).toBeGreaterThanOrEqual(100);
    expect(ids(await s.events.newest(100, NO_FILTER))).toEqual(Array.from({ length: 100 }, (_, i) => last - 99 + i));
  });

  it('decisions race: two concurrent decisions on one pending proposal give one decision and one fallback', async () => {
    const a = await db.open();
    const b = await db.open();
    await a.proposals.insertPending({ id: 'prop_race', kind: null, title: 'r', payload: {}, createdAt: T(1) });
    const arrive = barrier(backend.parallel ? 2 : 1);
    const decide = (s: StateStore, decision: string) =>
      s.transaction(async (tx) => {
        await tx.proposals.get('prop_race');
        await arrive(); // both transactions are open before either claims the proposal
        const wasPending = await tx.proposals.markDecided('prop_race', decision, T(2));
        await tx.decisions.insert({
          proposalId: 'prop_race',
          decision,
          kind: null,
          label: 'Proposal',
          wasPending,
          deferredExecution: true,
          severity: wasPending ? 'info' : 'fallback',
          scope: 'engine',
          extra: {},
          decidedAt: T(2),
        });
        if (!wasPending) await tx.fallbacks.increment('proposal_id_not_pending', T(2));
        await tx.events.append([draft(2, wasPending ? 'info' : 'fallback')]);
        return { decision, wasPending };
      });
    const results = await Promise.all([decide(a, 'approved'), decide(b, 'rejected')]);
    const winners = results.filter((r) => r.wasPending);
    expect(winners).toHaveLength(1);
    expect((await b.proposals.get('prop_race'))?.status).toBe(winners[0]?.decision);
    expect((await a.decisions.listFor('prop_race')).map((d) => d.wasPending).sort()).toEqual([false, true]);
    expect(await a.fallbacks.all()).toEqual(new Map([['proposal_id_not_pending', 1]]));
    expect((await a.events.after(0, 10, NO_FILTER)).map((r) => r.severity).sort()).toEqual(['fallback', 'info']);
  });

  it('workspace revisions race: of two writes with one revision, one wins and the other gets the conflict', async () => {
    const a = await db.open();
    const b = await db.open();
    for (const rev of [0, 1]) {
      const out = await Promise.all([a.workspace.put('w', rev, { by: 'a' }, T(rev)), b.workspace.put('w', rev, { by: 'b' }, T(rev))]);
      expect(out.filter((o) => o.ok)).toHaveLength(1);
      expect(out.filter((o) => !o.ok)).toEqual([{ ok: false, currentRevision: rev + 1 }]);
    }
    expect((await a.workspace.get('w'))?.revision).toBe(2);
  });

  it('lost once: two instances marking a dead one’s jobs at once mark each job exactly once', async () => {
    const a = await db.open();
    const b = await db.open();
    for (let i = 0; i < 6; i++) await a.jobs.insert(job(`gen_d${i}`, 'dead', i));
    await a.jobs.insert(job('gen_alive', 'alive', 9));
    const [byA, byB] = await Promise.all([a.jobs.markLost('dead', T(20)), b.jobs.markLost('dead', T(21))]);
    const marked = [...byA, ...byB].map((j) => j.proposalId).sort();
    expect(marked).toEqual(['gen_d0', 'gen_d1', 'gen_d2', 'gen_d3', 'gen_d4', 'gen_d5']);
    expect(await b.jobs.running('dead')).toEqual([]);
    expect(ids2p(await b.jobs.running())).toEqual(['gen_alive']);
    expect(await a.jobs.countsByState()).toEqual({ lost: 6, running: 1 });
  });

  it('a job’s final state commits with its event, only over running; an event whose job ended is dropped', async () => {
    const s = await db.open();
    await s.jobs.insert(job('gen_ok', 'a', 1));
    await s.jobs.insert(job('gen_gone', 'a', 2));
    const end = (state: string, endedAt: string) => ({
      state,
      endedAt,
      rc: state === 'lost' ? null : 0,
      signal: null,
      stdoutLines: 3,
      stderrLines: 1,
      exitReason: state === 'lost' ? 'lost' : 'exited',
      exitDetail: null,
    });
    // gen_gone ended already (marked lost by another instance): its exit must not overwrite that.
    const [lost] = await s.events.append([{ ...draft(1, 'failure', 'engine/generation'), guard: { job: 'gen_gone', end: end('lost', T(3)) } }]);
    expect(lost).not.toBeNull();
    expect((await s.jobs.get('gen_gone'))?.state).toBe('lost');
    const made = await s.events.append([
      { ...draft(2, 'info', 'engine/generation'), guard: { job: 'gen_ok' } },
      { ...draft(3, 'success', 'engine/generation'), guard: { job: 'gen_ok', end: end('exited ok', T(4)) } },
      { ...draft(4, 'success', 'engine/generation'), guard: { job: 'gen_gone', end: end('exited ok', T(4)) } },
      draft(5),
    ]);
    expect(made.map((e) => e === null)).toEqual([false, false, true, false]);
    expect(await s.jobs.get('gen_ok')).toEqual(expect.objectContaining({ state: 'exited ok', endedAt: T(4), rc: 0, stdoutLines: 3, stderrLines: 1, exitReason: 'exited' }));
    expect(await s.jobs.get('gen_gone')).toEqual(expect.objectContaining({ state: 'lost', endedAt: T(3), exitReason: 'lost' }));
    // Stored as returned: the dropped one is nowhere.
    expect(ids(await s.events.after(0, 10, NO_FILTER))).toEqual(ids([lost!, ...made.filter((e) => e !== null)]));
    // A job's line after it was marked lost: dropped on PostgreSQL (fencing); one instance on
    // SQLite has nobody to fence it, and stores what its own supervisor publishes.
    const [late] = await s.events.append([{ ...draft(6, 'info', 'engine/generation'), guard: { job: 'gen_gone' } }]);
    expect(late === null).toBe(backend.name === 'postgres');
  });

  it('lost once with its event: a judge and a restart marking one job at once store one lost event', async () => {
    const a = await db.open();
    const b = await db.open();
    for (let i = 0; i < 5; i++) await a.jobs.insert(job(`gen_r${i}`, 'dead', i));
    const lostEnd = { state: 'lost', endedAt: T(20), rc: null, signal: null, stdoutLines: 0, stderrLines: 0, exitReason: 'lost', exitDetail: null };
    const mark = (s: StateStore, tag: string) =>
      Promise.all(Array.from({ length: 5 }, (_, i) => s.events.append([{ ...draft(i, 'failure', 'engine/generation'), summary: `lost by ${tag}`, guard: { job: `gen_r${i}`, end: lostEnd } }])));
    const [byA, byB] = await Promise.all([mark(a, 'a'), mark(b, 'b')]);
    const stored = [...byA, ...byB].flat().filter((e) => e !== null);
    expect(stored).toHaveLength(5);
    expect(await a.jobs.countsByState()).toEqual({ lost: 5 });
    expect(await b.events.count()).toBe(5);
  });

  it('migrations: two instances starting together on a new database both start, with one schema', async () => {
    const [a, b] = await db.openTwoAtOnce();
    const expected = backend.name === 'sqlite' ? MIGRATIONS.length : PG_SCHEMA_VERSION;
    expect([a.schemaVersion, b.schemaVersion]).toEqual([expected, expected]);
    await a.proposals.insertPending({ id: 'prop_m', kind: null, title: 'm', payload: {}, createdAt: T(1) });
    expect((await b.proposals.get('prop_m'))?.title).toBe('m');
    if (backend.name === 'postgres') expect(await db.count('console_schema')).toBe(1);
  });

  it('a schema newer than the code: the store refuses to open, naming both versions', async () => {
    const s = await db.open();
    const version = s.schemaVersion;
    await db.close();
    await db.setSchemaVersion(version + 7);
    const refused = await db.open().then(
      () => undefined,
      (err: unknown) => err as Error & { code?: string },
    );
    expect(refused?.code).toBe('state_db_open_failed');
    expect(refused?.message).toMatch(new RegExp(`\\b${version + 7}\\b.*newer.*\\b${version}\\b`));
  });
});

describe('state store on sqlite: the service’s own writes', () => {
  it('jobs the service records through its synchronous repository belong to the store’s instance', async () => {
    const db = await backends[0]!.fresh();
    try {
      const s = await db.open();
      // What the supervisor writes today: JobsRepo, no instance.
      const raw = new Database(db.file as string);
      new JobsRepo(raw).insert({ proposalId: 'gen_old', projectId: 'p1', pid: 7, argv: ['node'], state: 'running', startedAt: T(1) });
      raw.close();
      expect((await s.jobs.get('gen_old'))?.instanceId).toBe('local');
      expect(ids2p(await s.jobs.running('local'))).toEqual(['gen_old']);
      expect(ids2p(await s.jobs.markLost('local', T(2)))).toEqual(['gen_old']);
    } finally {
      await db.close();
    }
  });
});

describe('state store on postgres: the connection', () => {
  it('opening fails at once for a refused login, and after the connect time-out for an unreachable server, naming CONSOLE_DATABASE_URL', async () => {
    const srv = pg.server();
    const bounds = { eventRetention: 100, clicksPerProject: 1, clicksMaxTotal: 1, workspaceReportsKept: 1 };
    const refused = await openPgStateStore({ ...bounds, url: srv.urlOf('postgres').replace(':console-test@', ':wrong@'), connectTimeoutMs: 60_000 }).catch((e: Error) => e);
    expect(refused).toMatchObject({ code: 'state_db_open_failed', message: expect.stringMatching(/CONSOLE_DATABASE_URL \(127\.0\.0\.1:\d+\/\w+\).*28P01/) });
    expect((refused as Error).message).not.toMatch(/postgres:\/\//);
    const away = await openPgStateStore({ ...bounds, url: 'postgres://u:secret@127.0.0.1:1/db', connectTimeoutMs: 300 }).catch((e: Error) => e);
    expect(away).toMatchObject({ code: 'state_db_open_failed', message: expect.stringMatching(/CONSOLE_DATABASE_URL \(.*\).*still unreachable after 300 ms/) });
    expect((away as Error).message).not.toContain('secret');
    const notPg = await openPgStateStore({ ...bounds, url: 'mysql://h/db', connectTimeoutMs: 300 }).catch((e: Error) => e);
    expect(notPg).toMatchObject({ code: 'state_db_open_failed', message: expect.stringContaining('postgres://') });
  });

  it('a connection lost mid-transaction: state_db_unreachable, answered 503 with Retry-After; the store goes on', async () => {
    const srv = pg.server();
    const url = await srv.freshDatabase();
    const name = new URL(url).pathname.slice(1);
    const s = await openPgStateStore({ url, connectTimeoutMs: 10_000, eventRetention: 100, clicksPerProject: 1, clicksMaxTotal: 1, workspaceReportsKept: 1 });
    try {
      const err = await s
        .transaction(async (tx) => {
          await tx.proposals.insertPending({ id: 'prop_cut', kind: null, title: 'c', payload: {}, createdAt: T(1) });
          await srv.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
          await tx.proposals.get('prop_cut');
        })
        .catch((e: unknown) => e as Error & { code?: string });
      expect(err).toMatchObject({ code: 'state_db_unreachable', retryAfterSeconds: 1 });
      const answer = answerOf(err as Parameters<typeof answerOf>[0]);
      expect([answer.status, answer.headers['Retry-After'], answer.body.code]).toEqual([503, '1', 'state_db_unreachable']);
      expect(await s.proposals.get('prop_cut')).toBeUndefined();
      await s.proposals.insertPending({ id: 'prop_after', kind: null, title: 'a', payload: {}, createdAt: T(2) });
      expect((await s.proposals.get('prop_after'))?.status).toBe('pending');
    } finally {
      await s.close();
    }
  });
});

function ids2(rows: readonly { id: string }[]): string[] {
  return rows.map((r) => r.id);
}

function ids2p(rows: readonly { proposalId: string }[]): string[] {
  return rows.map((r) => r.proposalId);
}

describe('state store on postgres: an append retried after its outcome was unknown', () => {
  it('stores nothing twice: events already stored (by their token) keep their ids, their guards are not applied again', async () => {
    const db = await pg.fresh();
    try {
      const s = await db.open();
      const source = await s.events.newSource();
      expect(await s.events.newSource()).toBeGreaterThan(source);
      await s.jobs.insert(job('gen_t', 'a', 1));
      const before = await s.events.lastId();
      const end = { state: 'exited ok', endedAt: T(2), rc: 0, signal: null, stdoutLines: 1, stderrLines: 0, exitReason: 'exited', exitDetail: null };
      const tokened = [
        { ...draft(1, 'info', 'engine/generation'), guard: { job: 'gen_t' }, token: source * 2 ** 32 + 1 },
        { ...draft(2, 'success', 'engine/generation'), guard: { job: 'gen_t', end }, token: source * 2 ** 32 + 2 },
      ];
      // The first attempt committed, but its answer was lost: the bus tries again, with more.
      const first = await s.events.append(tokened);
      const retried = await s.events.append([...tokened, { ...draft(3), token: source * 2 ** 32 + 3 }], before);
      expect(ids(retried.slice(0, 2))).toEqual(ids(first));
      expect(retried[2]).not.toBeNull();
      expect(ids(await s.events.after(0, 10, NO_FILTER))).toEqual(ids(retried));
      // The job's end was applied once (a second application would have dropped the exit event).
      expect((await s.jobs.get('gen_t'))?.state).toBe('exited ok');
    } finally {
      await db.close();
    }
  });
});
