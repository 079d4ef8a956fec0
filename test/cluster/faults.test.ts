/**
 * Cluster mode under faults (shared/design/cluster.md, "Under faults"), one deterministic test
 * per way it went wrong: instances on one real PostgreSQL (one server for this file), races
 * forced by requests released together, pauses made by SIGSTOP, and an instance's database
 * traffic frozen at an exact point of the protocol by a proxy (test/helpers/pg-proxy.ts) where
 * a SIGSTOP could not be placed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { alive, json, post, publish, startCluster, waitForJobEvent, type Cluster } from '../helpers/cluster.js';
import { startPgProxy, type PgProxy } from '../helpers/pg-proxy.js';
import { fixture } from '../helpers/service.js';
import type { ServiceProcess } from '../helpers/service-process.js';

let cluster: Cluster;
let a: ServiceProcess;
let b: ServiceProcess;
const proxies: PgProxy[] = [];

beforeAll(async () => {
  cluster = await startCluster();
  [a, b] = await Promise.all([cluster.start('a'), cluster.start('b')]);
});

afterAll(async () => {
  for (const p of proxies) p.thaw();
  await cluster?.stop();
  for (const p of proxies) await p.close();
});

/** An instance whose database traffic goes through a proxy of its own. */
async function proxied(id: string, extra: Record<string, string> = {}): Promise<{ p: ServiceProcess; proxy: PgProxy }> {
  const proxy = await startPgProxy(cluster.pg.port);
  proxies.push(proxy);
  const p = await cluster.start(id, { CONSOLE_DATABASE_URL: proxy.via(cluster.url), ...extra });
  return { p, proxy };
}

type Take = { take_id: string; primary: boolean; circled: boolean; rejected: boolean };
const takesOn = (p: ServiceProcess, beat = 'b01') => json<Take[]>(fetch(`${p.url}/api/beats/${beat}/takes?projectId=harbor-lights`));
const act = (p: ServiceProcess, takeId: string, action: string) => post(p, `/api/takes/${takeId}/action`, { projectId: 'harbor-lights', action });

describe('take actions race between instances', () => {
  it('lose no acknowledged update: the final state is the committed actions replayed in event-id order, on every instance', async () => {
    const take = 'tk_0003';
    const start = (await takesOn(a)).find((t) => t.take_id === take) as Take;
    const answered: { eventId: string; state: { circled: boolean } }[] = [];
    for (let round = 0; round < 15; round++) {
      // Released together, on two instances: each reads the row the other may be writing.
      const rs = await Promise.all([act(a, take, 'circled_toggled'), act(b, take, 'circled_toggled'), act(a, take, 'circled_toggled')]);
      for (const r of rs) {
        expect(r.status).toBe(200);
        answered.push((await r.json()) as { eventId: string; state: { circled: boolean } });
      }
    }
    // Replayed in event-id order, each toggle flips what the one before left.
    answered.sort((x, y) => Number(x.eventId) - Number(y.eventId));
    let circled = start.circled;
    for (const x of answered) {
      circled = !circled;
      expect(x.state.circled).toBe(circled);
    }
    for (const p of [a, b]) {
      await waitFor(async () => ((await takesOn(p)).find((t) => t.take_id === take)?.circled === circled ? true : undefined), `the replayed state on ${p.url}`);
    }
  });

  it('never answer 500 when two instances mark two takes of one shot primary at once: one primary, the later committed', async () => {
    for (let round = 0; round < 10; round++) {
      const [x, y] = round % 2 === 0 ? ['tk_0001', 'tk_0002'] : ['tk_0002', 'tk_0001'];
      const rs = await Promise.all([act(a, x, 'marked_primary'), act(b, y, 'marked_primary')]);
      expect(rs.map((r) => r.status)).toEqual([200, 200]);
      const [ax, by] = (await Promise.all(rs.map((r) => r.json()))) as { eventId: string }[];
      const winner = Number(ax!.eventId) > Number(by!.eventId) ? x : y;
      for (const p of [a, b]) {
        const primaries = await waitFor(async () => {
          const ps = (await takesOn(p)).filter((t) => ['tk_0001', 'tk_0002', 'tk_0003', 'tk_0004'].includes(t.take_id) && t.primary);
          return ps.length === 1 && ps[0]!.take_id === winner ? ps : undefined;
        }, `one primary (${winner}) on ${p.url}`);
        expect(primaries.map((t) => t.take_id)).toEqual([winner]);
      }
    }
  });
});

describe('an instance frozen in the middle of its work', () => {
  it('holds nothing every instance needs: the others append events while it is frozen after appending its own', async () => {
    const { p: f, proxy } = await proxied('frozen-seq');
    // The statement that takes the event sequencer: the old append's UPDATE, or the function.
    const frozen = proxy.freezeAfter('event_sequencer', 'console_append');
    const pending = post(f, '/api/proposals', { title: 'frozen after its append' }).catch(() => null);
    await frozen;
    try {
      // The others write and publish while it stays frozen.
      const created = await post(b, '/api/proposals', { title: 'while another is frozen' });
      expect(created.status).toBe(201);
      expect(await publish(a, 'while another is frozen')).toMatch(/^\d+$/);
      expect(proxy.frozen).toBe(true);
    } finally {
      proxy.thaw();
    }
    await pending;
  });

  it('costs the others at most the session bounds when it is frozen inside a transaction that holds a row they need', async () => {
    const { p: f, proxy } = await proxied('frozen-row');
    const { proposalId } = await json<{ proposalId: string }>(post(a, '/api/proposals', { title: 'decided by two' }));
    // Frozen with the proposal's row locked by its decision, its transaction open.
    const frozen = proxy.freezeAfter('UPDATE proposals');
    const pending = post(f, `/api/proposals/${proposalId}/approve`, {}).then(
      (r) => r.status,
      () => null,
    );
    await frozen;
    try {
      // Answered while the holder stays frozen: refused (lock_timeout) or decided (the holder's
      // session ended by idle_in_transaction_session_timeout), and decided in the end.
      const statuses: number[] = [];
      await waitFor(
        async () => {
          const r = await post(b, `/api/proposals/${proposalId}/reject`, {});
          statuses.push(r.status);
          await r.body?.cancel();
          return r.status === 200 ? true : undefined;
        },
        'the decision on another instance',
        30_000,
      );
      expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
      expect(proxy.frozen).toBe(true);
    } finally {
      proxy.thaw();
    }
    // The frozen instance's decision was never acknowledged: its session was ended.
    expect(await pending).not.toBe(200);
    const history = await json<{ decision: string; wasPending: boolean }[]>(fetch(`${a.url}/api/proposals/${proposalId}/decisions`));
    expect(history.filter((h) => h.wasPending)).toEqual([expect.objectContaining({ decision: 'rejected' })]);
  });

  it('a stream resumed with Last-Event-ID on an instance whose delivery head trails it never goes backwards', async () => {
    const { p: f, proxy } = await proxied('trailing');
    await publish(f, 'seen by the trailing instance');
    await waitFor(async () => ((await json<{ bus: { lastEventId: string } }>(fetch(`${f.url}/api/system-status`))).bus.lastEventId !== '0' ? true : undefined), 'its head');
    // Its head stops moving: nothing of the others reaches it.
    proxy.freeze();
    const ids: string[] = [];
    try {
      for (let i = 0; i < 5; i++) ids.push(await publish(a, `ahead ${i}`));
      const last = ids.at(-1) as string;
      const s = cluster.stream(f, { 'Last-Event-ID': last });
      await s.until((x) => x.status === 200, 'the stream open');
      proxy.thaw();
      const after = await publish(b, 'after the resume point');
      await s.until((x) => x.events.some((e) => e.id === after), 'the event after the resume point');
      const got = s.events.map((e) => Number(e.id));
      expect(got.filter((id) => id <= Number(last))).toEqual([]);
      expect(got).toEqual([...got].sort((x, y) => x - y));
    } finally {
      proxy.thaw();
    }
  });
});

describe('a paused instance judged dead', () => {
  it('comes back without resurrecting its lost job: one lost event, nothing after it, the state stays lost, its process killed', async () => {
    const p = await cluster.start('paused', { DISPATCH_CLI: fixture('slow-lines.mjs') });
    const { proposalId } = await json<{ proposalId: string }>(post(p, '/api/proposals/generate', { project: 'harbor-lights', shotId: 'slow100000' }));
    await waitForJobEvent(a, p, proposalId, (e) => e.summary === 'line 20', 'the job printing');
    const { pid } = await json<{ pid: number }>(fetch(`${a.url}/api/jobs/${proposalId}`));
    cluster.leftovers.push(pid);
    p.child.kill('SIGSTOP');
    try {
      await waitFor(async () => ((await json<{ state: string }>(fetch(`${a.url}/api/jobs/${proposalId}`))).state === 'lost' ? true : undefined), 'a survivor to mark the job lost');
    } finally {
      p.child.kill('SIGCONT');
    }
    // It learns it was judged: the job's process tree is killed, and it serves again.
    await waitFor(() => (alive(pid) ? undefined : true), 'the lost job’s process killed by its own instance');
    await waitFor(async () => ((await fetch(`${p.url}/api/ready`)).status === 200 ? true : undefined), 'the paused instance ready again');
    // A marker published after all that: every event of the job is stored before it, on every instance.
    const marker = Number(await publish(p, 'after the resume'));
    for (const q of [a, b, p]) {
      await waitFor(async () => (Number((await json<{ bus: { lastEventId: string } }>(fetch(`${q.url}/api/system-status`))).bus.lastEventId) >= marker ? true : undefined), 'the marker');
      const events: EngineEvent[] = await allEvents(q.url, `proposalId=${proposalId}`);
      const lost = events.filter((e) => e.summary.startsWith('dispatch_cli lost pid='));
      expect(lost).toHaveLength(1);
      expect(events.at(-1)).toEqual(lost[0]);
      expect(events.some((e) => e.summary.startsWith('dispatch_cli exited'))).toBe(false);
      expect((await json<{ state: string }>(fetch(`${q.url}/api/jobs/${proposalId}`))).state).toBe('lost');
    }
  });
});
