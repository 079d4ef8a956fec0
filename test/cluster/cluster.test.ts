/**
 * Cluster mode (shared/design/cluster.md): three service processes on one real
 * PostgreSQL (one server for this file), each with its own state folder, all serving one
 * engine store. Every read answers the same on every instance; events published on any reach
 * the stream clients of all, in order, once; a client resumes on another instance; a decision
 * raced by two instances is recorded once; a dead instance's running job is marked lost once,
 * by one survivor; a second process under a live instance's id is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { alive, json, post, publish, startCluster, waitForJobEvent, type Cluster } from '../helpers/cluster.js';
import { startNginx } from '../helpers/nginx.js';
import { DISPATCH_TOOL, fixture } from '../helpers/service.js';
import { failedStart, type ServiceProcess } from '../helpers/service-process.js';

let cluster: Cluster;
const start = (id: string, extra: Record<string, string> = {}) => cluster.start(id, extra);
const stream = (p: Pick<ServiceProcess, 'url'>, headers: Record<string, string> = {}) => cluster.stream(p, headers);

let a: ServiceProcess;
let b: ServiceProcess;
let c: ServiceProcess;

beforeAll(async () => {
  // A kill grace never reached: a cancelled job ends by SIGTERM (rc 143) once it runs (Node's
  // handler re-raises it), which on a loaded machine can take longer than the helper's 300 ms.
  cluster = await startCluster({ CONSOLE_KILL_GRACE_MS: '60000' });
  // Started together: the migrations run under the advisory lock, once.
  [a, b, c] = await Promise.all([start('a'), start('b'), start('c')]);
});

afterAll(async () => {
  await cluster?.stop();
});

describe('three instances on one PostgreSQL', () => {
  it('list each other in the system status, are ready, and name themselves', async () => {
    const status = await waitFor(async () => {
      const s = await json<{ instance: string; instances: { id: string; alive: boolean }[]; database: { backend: string } }>(fetch(`${a.url}/api/system-status`));
      return s.instances.filter((i) => i.alive).length === 3 ? s : undefined;
    }, 'three live instances');
    expect(status.instance).toBe('a');
    expect(status.database.backend).toBe('postgres');
    expect(status.instances.map((i) => i.id)).toEqual(['a', 'b', 'c']);
    for (const p of [a, b, c]) expect((await fetch(`${p.url}/api/ready`)).status).toBe(200);
    // Every metric names the instance.
    const metrics = await (await fetch(`${b.url}/api/metrics`)).text();
    const samples = metrics.split('\n').filter((l) => l !== '' && !l.startsWith('#'));
    expect(samples.length).toBeGreaterThan(20);
    for (const line of samples) expect(line).toMatch(/[{,]instance="b"[,}]/);
  });

  it('answer the same reads: a proposal created on one is listed, decided and its events served on the others', async () => {
    const { proposalId } = await json<{ proposalId: string }>(post(a, '/api/proposals', { title: 'shared' }));
    for (const p of [b, c]) {
      const list = await json<{ id: string; status: string }[]>(fetch(`${p.url}/api/proposals`));
      expect(list.find((x) => x.id === proposalId)).toMatchObject({ status: 'pending' });
    }
    await json(post(b, `/api/proposals/${proposalId}/approve`, {}));
    const history = await json<{ decision: string; wasPending: boolean }[]>(fetch(`${c.url}/api/proposals/${proposalId}/decisions`));
    expect(history).toEqual([expect.objectContaining({ decision: 'approved', wasPending: true })]);
    const [ea, ec] = await Promise.all([allEvents(a.url, `proposalId=${proposalId}`), allEvents(c.url, `proposalId=${proposalId}`)]);
    expect(ec.map((e) => e.summary)).toEqual(ea.map((e) => e.summary));
    expect(ec.map((e) => e.summary)).toEqual([`Proposal created: shared (${proposalId})`, `Proposal approved (${proposalId})`]);
  });

  it('stream every instance’s events to every instance’s clients, in id order, each once', async () => {
    const clients = [stream(a), stream(b), stream(c)];
    await Promise.all(clients.map((s) => s.until((x) => x.status === 200, 'the stream open')));
    const published: string[] = [];
    await Promise.all(
      [a, b, c].map(async (p, k) => {
        for (let i = 0; i < 40; i++) published.push(await publish(p, `from ${k} #${i}`));
      }),
    );
    const ids = new Set(published);
    for (const s of clients) {
      await s.until((x) => x.events.filter((e) => ids.has(e.id)).length === ids.size, 'every published event');
      const seen = s.events.map((e) => Number(e.id));
      expect(seen).toEqual([...seen].sort((x, y) => x - y));
      expect(new Set(seen).size).toBe(seen.length);
    }
    // Every instance saw the same sequence.
    const [x, y, z] = clients.map((s) => s.events.filter((e) => ids.has(e.id)).map((e) => e.id));
    expect(y).toEqual(x);
    expect(z).toEqual(x);
  });

  it('filter reads on PostgreSQL: by severities and scope prefix, pages of GET /api/events and a stream resumed with Last-Event-ID hold exactly the matching events, in order', async () => {
    const severities = ['info', 'failure', 'warning', 'success'] as const;
    // Prefixes with LIKE's wildcards must match literally: `a_` is not `ab`, `%` not anything.
    const scopes = ['a/x', 'ab/x', 'a_/x', 'b/x', 'b/y'];
    const send = (p: ServiceProcess, i: number) =>
      json<{ id: string }>(post(p, '/api/internal/bus', { severity: severities[i % 4], scope: `test-filters/${scopes[i % 5]}`, summary: `filtered ${i}` }));
    const sendMany = async (from: number, n: number) => {
      for (let i = from; i < from + n; i += 50) await Promise.all(Array.from({ length: Math.min(50, from + n - i) }, (_, k) => send([a, b, c][(i + k) % 3] as ServiceProcess, i + k)));
    };
    const start = Number(await publish(a, 'before the filtered events'));
    await sendMany(0, 1200);
    const everything = (await allEvents(c.url, 'scopePrefix=test-filters/', String(start))).filter((e) => e.summary.startsWith('filtered '));
    expect(everything).toHaveLength(1200);
    const from = everything[99]?.id as string;
    const filters: [string, (e: EngineEvent) => boolean][] = [
      ['severities=failure&severities=warning&scopePrefix=test-filters/a', (e) => (e.severity === 'failure' || e.severity === 'warning') && e.scope.startsWith('test-filters/a')],
      ['scopePrefix=test-filters/a_', (e) => e.scope.startsWith('test-filters/a_')],
      ['scopePrefix=test-filters/%25', () => false],
      ['severities=success', (e) => e.severity === 'success' && e.scope.startsWith('test-filters/')],
      ['severities=failure&scopePrefix=test-filters/none', () => false],
    ];
    for (const [query, passes] of filters) {
      const want = everything.filter((e) => Number(e.id) > Number(from) && passes(e));
      const read = (await allEvents(a.url, query, from)).filter((e) => e.scope.startsWith('test-filters/'));
      expect(
        read.map((e) => e.id),
        query,
      ).toEqual(want.map((e) => e.id));
    }
    // The first filter as a stream on another instance, resumed after `from`: the replay, then live events, once each.
    const [query, passes] = filters[0] as [string, (e: EngineEvent) => boolean];
    const replay = everything.filter((e) => Number(e.id) > Number(from) && passes(e));
    expect(replay.length).toBeGreaterThan(100);
    const filtered = cluster.stream(b, { 'Last-Event-ID': from }, `?${query}`);
    await filtered.until((x) => x.events.length >= replay.length, 'the filtered replay');
    await sendMany(1200, 60);
    const live = (await allEvents(c.url, 'scopePrefix=test-filters/', everything.at(-1)?.id)).filter(passes);
    await filtered.until((x) => x.events.length >= replay.length + live.length, 'the filtered live events');
    expect(filtered.events.map((e) => e.id)).toEqual([...replay, ...live].map((e) => e.id));
  });

  it('record one decision and one fallback when two instances decide one pending proposal at once', async () => {
    for (let round = 0; round < 5; round++) {
      const { proposalId } = await json<{ proposalId: string }>(post(c, '/api/proposals', { title: `race ${round}` }));
      const answers = await Promise.all([post(a, `/api/proposals/${proposalId}/approve`, {}), post(b, `/api/proposals/${proposalId}/reject`, {})]);
      expect(answers.map((r) => r.status)).toEqual([200, 200]);
      const history = await json<{ wasPending: boolean }[]>(fetch(`${a.url}/api/proposals/${proposalId}/decisions`));
      expect(history.map((h) => h.wasPending).sort()).toEqual([false, true]);
    }
  });

  it('hold workspace revisions across instances: of two writes of one revision at once, one wins and the other gets 409', async () => {
    const put = (p: ServiceProcess, revision: number, state: unknown) =>
      fetch(`${p.url}/api/workspace-state/ws_cluster`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ revision, state }) });
    for (let revision = 0; revision < 5; revision++) {
      const answers = await Promise.all([put(a, revision, { by: 'a', revision }), put(b, revision, { by: 'b', revision })]);
      expect(answers.map((r) => r.status).sort()).toEqual([200, 409]);
    }
    const stored = await json<{ revision: number }>(fetch(`${c.url}/api/workspace-state/ws_cluster`));
    expect(stored.revision).toBe(5);
  });

  it('shows a take action recorded on one instance in the takes of the others', async () => {
    type Take = { take_id: string; circled: boolean };
    const takesOn = (p: ServiceProcess) => json<Take[]>(fetch(`${p.url}/api/beats/b01/takes?projectId=harbor-lights`));
    const before = (await takesOn(b)).find((t) => t.take_id === 'tk_0002');
    expect(before).toBeDefined();
    await json(post(a, '/api/takes/tk_0002/action', { projectId: 'harbor-lights', action: 'circled_toggled' }));
    for (const p of [b, c]) {
      await waitFor(async () => ((await takesOn(p)).find((t) => t.take_id === 'tk_0002')?.circled === !before!.circled ? true : undefined), `the toggled take on ${p.url}`);
    }
  });

  it('reads a project again on every instance once a job of another instance ends, the store folder unwatched (a network share): told by the database, not by an event’s text', async () => {
    // No watch and no revalidation within the test: only the job's end can tell `w2`.
    const env = { CONSOLE_STORE_WATCH: 'off', CONSOLE_STORE_REVALIDATE_MS: '3600000', DISPATCH_CLI: DISPATCH_TOOL };
    const [w1, w2] = await Promise.all([start('w1', env), start('w2', env)]);
    type Take = { take_id: string };
    const takesOn = (p: ServiceProcess) => json<Take[]>(fetch(`${p.url}/api/beats/b01/takes?projectId=harbor-lights`));
    // Read (and cached) on both before the job.
    const before = (await takesOn(w2)).map((t) => t.take_id);
    expect((await takesOn(w1)).map((t) => t.take_id)).toEqual(before);
    const { proposalId } = await json<{ proposalId: string }>(post(w1, '/api/proposals/generate', { project: 'harbor-lights', shotId: 'sh010', model: 'studio-v9' }));
    const job = await waitFor(async () => {
      const j = await json<{ state: string }>(fetch(`${w2.url}/api/jobs/${proposalId}`));
      return j.state !== 'running' ? j : undefined;
    }, 'the job’s end');
    expect(job.state).toBe('exited ok');
    for (const p of [w1, w2]) {
      const after = await waitFor(async () => {
        const ids = (await takesOn(p)).map((t) => t.take_id);
        return ids.length > before.length ? ids : undefined;
      }, `the new take on ${p.url}`);
      expect(after).toEqual(expect.arrayContaining(before));
      expect(after).toHaveLength(before.length + 1);
    }
  });

  it('keeps every line of jobs that print and exit before their launch is stored: counted, stored and served in order', async () => {
    // The reader of a job is attached once its launch is stored (a database round trip here);
    // a short job has printed and exited by then, and Node discards unread pipes at the exit.
    const s1 = await start('s1', { DISPATCH_CLI: fixture('load-tool.mjs') });
    const ids = await Promise.all(Array.from({ length: 24 }, () => json<{ proposalId: string }>(post(s1, '/api/proposals/generate', { project: 'harbor-lights', shotId: 'flood20' }))));
    type Job = { state: string; stdoutLines: number; stderrLines: number };
    for (const { proposalId } of ids) {
      const job = await waitFor(async () => {
        const j = await json<Job>(fetch(`${a.url}/api/jobs/${proposalId}`));
        return j.state !== 'running' ? j : undefined;
      }, `the end of ${proposalId}`);
      expect(job, proposalId).toMatchObject({ state: 'exited ok', stdoutLines: 20, stderrLines: 2 });
      const events = await json<EngineEvent[]>(fetch(`${a.url}/api/jobs/${proposalId}/events?limit=500`));
      expect(
        events.filter((e) => e.detail?.startsWith(`${proposalId} stdout`)).map((e) => e.summary),
        proposalId,
      ).toEqual(Array.from({ length: 20 }, (_, i) => `flood ${i + 1}`));
    }
  });

  it('stores events on the event append thread: its own connection, its figures in the status; a job’s lines stored as the job I/O thread made them', async () => {
    const w = await start('w', { DISPATCH_CLI: fixture('load-tool.mjs'), CONSOLE_EVENT_APPEND_THREAD_NICE: '7' });
    const { proposalId } = await json<{ proposalId: string }>(post(w, '/api/proposals/generate', { project: 'harbor-lights', shotId: 'flood20' }));
    await waitFor(async () => ((await json<{ state: string }>(fetch(`${w.url}/api/jobs/${proposalId}`))).state !== 'running' ? true : undefined), 'the job’s end');
    // Read on another instance: as stored, every field of each line event.
    const events = await json<EngineEvent[]>(fetch(`${b.url}/api/jobs/${proposalId}/events?limit=500`));
    const out = events.filter((e) => e.detail?.includes(' stdout line '));
    expect(out.map(({ severity, scope, summary, detail, payload }) => ({ severity, scope, summary, detail, payload }))).toEqual(
      Array.from({ length: 20 }, (_, i) => ({
        severity: 'info',
        scope: 'engine/generation',
        summary: `flood ${i + 1}`,
        detail: `${proposalId} stdout line ${i + 1}`,
        payload: { source: 'dispatch_cli' },
      })),
    );
    expect(events.filter((e) => e.detail?.includes(' stderr line ')).map((e) => [e.severity, e.summary])).toEqual([
      ['warning', 'flood-err 1'],
      ['warning', 'flood-err 2'],
    ]);
    for (const e of events) expect(new Date(e.ts).toISOString()).toBe(e.ts);
    type Writer = { tid: number | null; nice: number | null; appends: number; rows: number; youngGenerationMb: number | null };
    const status = await json<{ database: { backend: string; eventWriter: Writer } }>(fetch(`${w.url}/api/system-status`));
    const writer = status.database.eventWriter;
    expect(writer).toMatchObject({ nice: 7 });
    expect(writer.youngGenerationMb).toBeGreaterThan(8);
    expect(writer.tid).not.toBe(w.servicePid());
    expect(fs.existsSync(`/proc/${w.servicePid()}/task/${writer.tid}`), 'a thread of the service').toBe(true);
    // The job's 22 lines, its spawn and exit events at least.
    expect(writer.rows).toBeGreaterThanOrEqual(24);
    expect(writer.appends).toBeGreaterThan(0);
    // The appends' connection is its own, named.
    const sessions = await cluster.pg.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'console-backend event appends'`);
    expect(sessions.rows[0]?.n).toBeGreaterThanOrEqual(1);
    expect(await w.stop()).toEqual([0, null]);
  });

  it('stops with a logged error and exit 1 when its event append thread crashes; what it acknowledged is kept', async () => {
    const trigger = path.join(cluster.tmp, 'append-crash-now');
    const x = await start('x', { NODE_OPTIONS: `--require ${fixture('thread-crash-preload.cjs')}`, CRASH_THREAD: 'pg-append', CRASH_TRIGGER: trigger, LOG_LEVEL: 'info' });
    const acked = [await publish(x, 'before the crash 1'), await publish(x, 'before the crash 2')];
    fs.writeFileSync(trigger, '');
    expect(await x.exited).toEqual([1, null]);
    expect(x.stderr()).toMatch(/^console-backend: the pg-append thread crashed on purpose; exiting\n$/);
    const fatal = x
      .stdout()
      .split('\n')
      .filter((l) => l.includes('the event append thread died'))
      .map((l) => JSON.parse(l) as { err: string; stack: string });
    expect(fatal, x.stdout()).toHaveLength(1);
    expect(fatal[0]?.err).toBe('the pg-append thread crashed on purpose');
    expect(fatal[0]?.stack).toContain('thread-crash-preload.cjs');
    const stored = new Set((await allEvents(a.url, 'scopePrefix=test/cluster')).map((e) => e.id));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
  });

  it('stops with a logged error and exit 1 when its event append thread answers no ping past CONSOLE_THREAD_ANSWER_LIMIT_MS (hung)', async () => {
    const trigger = path.join(cluster.tmp, 'append-hang-now');
    const env = { NODE_OPTIONS: `--require ${fixture('thread-crash-preload.cjs')}`, CRASH_THREAD: 'pg-append', CRASH_TRIGGER: trigger, CRASH_MODE: 'hang' };
    const y = await start('y', { ...env, CONSOLE_THREAD_ANSWER_LIMIT_MS: '2000', LOG_LEVEL: 'info' });
    const acked = await publish(y, 'before the hang');
    fs.writeFileSync(trigger, '');
    expect(await y.exited).toEqual([1, null]);
    expect(fs.existsSync(`${trigger}.hung`)).toBe(true);
    expect(y.stderr()).toBe('console-backend: the event append thread did not answer within 2000 ms; exiting\n');
    expect(
      y
        .stdout()
        .split('\n')
        .filter((l) => l.includes('the event append thread died')),
    ).toHaveLength(1);
    expect((await allEvents(a.url, 'scopePrefix=test/cluster')).some((e) => e.id === acked)).toBe(true);
  });

  it('cancels a job from another instance: routed to its owner, answered once its group was signalled; 409 once it ended', async () => {
    const { proposalId } = await json<{ proposalId: string }>(post(b, '/api/proposals/generate', { project: 'harbor-lights' }));
    await waitForJobEvent(a, b, proposalId, (x) => x.summary.startsWith('ready '), 'the job running');
    const r = await post(a, `/api/jobs/${proposalId}/cancel`, {});
    expect(r.status).toBe(202);
    expect(await r.json()).toMatchObject({ proposalId, cancelRequested: true, instanceId: 'b' });
    const ended = await waitFor(async () => {
      const job = await json<{ state: string; rc: number | null; cancelRequested: boolean; exitReason: string }>(fetch(`${c.url}/api/jobs/${proposalId}`));
      return job.state !== 'running' ? job : undefined;
    }, 'the cancelled job’s exit');
    expect(ended).toMatchObject({ state: 'exited failed', rc: 143, cancelRequested: true, exitReason: 'cancelled' });
    expect((await post(c, `/api/jobs/${proposalId}/cancel`, {})).status).toBe(409);
    expect((await post(c, '/api/jobs/gen_000000000000/cancel', {})).status).toBe(404);
  });

  it('terminals: recorded for every instance, the status global, a start elsewhere answers the running one, a stop from another instance reaches the owner', async () => {
    const first = 21_000 + Math.floor(Math.random() * 400) * 10;
    const t1 = await start('t1', {
      TTYD_BIN: fixture('ttyd-standin.mjs'),
      TTYD_COMMAND: JSON.stringify([process.execPath, fixture('forever.mjs')]),
      CONSOLE_TTYD_PORTS: `${first}-${first + 9}`,
      CONSOLE_TTYD_READY_MS: '60000',
    });
    type Terminal = { projectId: string; state: string; pid: number; port: number; url: string };
    const started = await post(t1, '/api/ttyd/start', { projectId: 'harbor-lights' });
    expect(started.status).toBe(201);
    const term = (await started.json()) as Terminal;
    const onA = await json<{ terminals: Terminal[] }>(fetch(`${a.url}/api/ttyd/status?projectId=harbor-lights`));
    expect(onA.terminals).toEqual([expect.objectContaining({ projectId: 'harbor-lights', state: 'running', pid: term.pid, port: term.port, url: term.url })]);
    const again = await post(b, '/api/ttyd/start', { projectId: 'harbor-lights' });
    expect(again.status).toBe(200);
    expect(await again.json()).toMatchObject({ pid: term.pid, url: term.url });
    const stopped = await json<{ stopped: boolean; terminal: Terminal }>(post(c, '/api/ttyd/stop', { projectId: 'harbor-lights' }));
    expect(stopped).toMatchObject({ stopped: true, terminal: { projectId: 'harbor-lights', state: 'stopped' } });
    expect(alive(term.pid)).toBe(false);
    const status = await json<{ terminals: Terminal[] }>(fetch(`${b.url}/api/ttyd/status`));
    expect(status.terminals.find((t) => t.projectId === 'harbor-lights')).toMatchObject({ state: 'stopped' });
  });

  it('stops start-up on a refused login, naming CONSOLE_DATABASE_URL as host:port/database only', async () => {
    const wrong = new URL(cluster.url);
    wrong.password = 'not-the-password';
    const r = await failedStart({ env: cluster.envOf('x', { CONSOLE_DATABASE_URL: wrong.toString(), CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: '2000' }) });
    expect(r.code).not.toBe(0);
    expect(r.listened).toBe(false);
    expect(r.stderr).toMatch(/CONSOLE_DATABASE_URL \(127\.0\.0\.1:\d+\/\w+\)/);
    expect(r.stderr).not.toMatch(/postgres:\/\//);
    expect(r.stderr).not.toContain('not-the-password');
  });

  it('refuses a second process under a live instance’s id, naming CONSOLE_INSTANCE_ID', async () => {
    const r = await failedStart({ env: cluster.envOf('a') });
    expect(r.code).not.toBe(0);
    expect(r.listened).toBe(false);
    expect(r.stderr).toMatch(/CONSOLE_INSTANCE_ID/);
  });

  it('a client resumes on another instance with Last-Event-ID after its instance is killed, losing nothing', async () => {
    const d = await start('d');
    const onD = stream(d);
    await onD.until((x) => x.status === 200, 'the stream open');
    const first = await publish(a, 'before the kill');
    await onD.until((x) => x.events.some((e) => e.id === first), 'the event before the kill');
    d.child.kill('SIGKILL');
    await d.exited;
    const after = [await publish(b, 'after the kill 1'), await publish(c, 'after the kill 2')];
    const resumed = stream(c, { 'Last-Event-ID': first });
    await resumed.until((x) => after.every((id) => x.events.some((e) => e.id === id)), 'the events after the kill');
    const got = resumed.events.map((e) => Number(e.id));
    expect(got[0]).toBe(Number(first) + 1);
    expect(got).toEqual(Array.from({ length: got.length }, (_, i) => Number(first) + 1 + i));
  });

  it('marks the running job of a killed instance lost exactly once, by one survivor', async () => {
    const e = await start('e');
    const { proposalId } = await json<{ proposalId: string }>(post(e, '/api/proposals/generate', { project: 'harbor-lights' }));
    await waitForJobEvent(a, e, proposalId, (x) => x.summary.startsWith('ready '), 'the job running');
    const jobOnA = await json<{ state: string; pid: number; instanceId: string }>(fetch(`${a.url}/api/jobs/${proposalId}`));
    expect(jobOnA).toMatchObject({ state: 'running', instanceId: 'e' });
    // The job's process group outlives its killed instance (until that instance starts again).
    cluster.leftovers.push(jobOnA.pid);
    e.child.kill('SIGKILL');
    await e.exited;
    const lost = await waitFor(async () => {
      const job = await json<{ state: string }>(fetch(`${b.url}/api/jobs/${proposalId}`));
      return job.state === 'lost' ? job : undefined;
    }, 'the job marked lost');
    expect(lost).toMatchObject({ state: 'lost' });
    // Every survivor judged; one event only.
    await new Promise((r) => setTimeout(r, 2500));
    const events: EngineEvent[] = await allEvents(c.url, `proposalId=${proposalId}`);
    expect(events.filter((x) => x.summary.startsWith('dispatch_cli lost pid=')).length).toBe(1);
    const status = await json<{ instances: { id: string; alive: boolean }[] }>(fetch(`${a.url}/api/system-status`));
    expect(status.instances.find((i) => i.id === 'e')).toMatchObject({ alive: false });
    // Started again under its id, the instance kills what is left of its job, marked lost by another.
    expect(alive(jobOnA.pid)).toBe(true);
    await start('e');
    await waitFor(() => (alive(jobOnA.pid) ? undefined : true), 'the lost job’s process killed by its instance’s next start');
  });

  it('answers 504 when the instance that runs the job does not act within 5 s (it is stopped); the cancel stays recorded', async () => {
    const x = await start('x1');
    const { proposalId } = await json<{ proposalId: string }>(post(x, '/api/proposals/generate', { project: 'harbor-lights' }));
    await waitForJobEvent(a, x, proposalId, (e) => e.summary.startsWith('ready '), 'the job running');
    cluster.leftovers.push((await json<{ pid: number }>(fetch(`${a.url}/api/jobs/${proposalId}`))).pid);
    x.child.kill('SIGSTOP');
    try {
      const r = await post(a, `/api/jobs/${proposalId}/cancel`, {});
      expect(r.status).toBe(504);
      expect(await r.json()).toMatchObject({ code: 'owner_not_acknowledged' });
      expect(await json(fetch(`${b.url}/api/jobs/${proposalId}`))).toMatchObject({ cancelRequested: true });
    } finally {
      x.child.kill('SIGCONT');
    }
  });

  it('behind nginx: a stream client keeps receiving after the instance it was on is killed (it reconnects with Last-Event-ID, as EventSource does)', async () => {
    // Three instances of their own behind the balancer (the others' tests go on after this one).
    const trio = await Promise.all([start('g'), start('h'), start('i')]);
    const lb = await startNginx(trio.map((p) => `127.0.0.1:${p.port}`));
    try {
      const streamsOf = async (p: ServiceProcess) => (await json<{ bus: { subscribers: number } }>(fetch(`${p.url}/api/system-status`))).bus.subscribers;
      const first = stream({ url: lb.url } as ServiceProcess);
      await first.until((x) => x.status === 200, 'the stream open through nginx');
      const holder = await waitFor(async () => {
        const counts = await Promise.all(trio.map(streamsOf));
        return counts.reduce((x, y) => x + y, 0) === 1 ? trio[counts.indexOf(1)] : undefined;
      }, 'the instance holding the stream');
      const published: string[] = [];
      for (let i = 0; i < 10; i++) published.push(await publish(a, `before ${i}`));
      await first.until((x) => published.every((id) => x.events.some((e) => e.id === id)), 'the events before the kill');
      holder.child.kill('SIGKILL');
      await holder.exited;
      await first.done;
      for (let i = 0; i < 10; i++) published.push(await publish(b, `after ${i}`));
      const last = first.events.at(-1)?.id as string;
      // What EventSource does when its stream ends: connect again with the last id it saw.
      const second = stream({ url: lb.url } as ServiceProcess, { 'Last-Event-ID': last });
      await second.until((x) => published.every((id) => [...first.events, ...x.events].some((e) => e.id === id)), 'the events after the kill, through nginx');
      expect(second.status).toBe(200);
      const seen = [...first.events, ...second.events].map((e) => Number(e.id));
      expect(seen).toEqual([...seen].sort((x, y) => x - y));
      expect(new Set(seen).size).toBe(seen.length);
      expect(Number(second.events[0]?.id)).toBe(Number(last) + 1);
    } finally {
      await lb.stop();
    }
  });

  // Last: it stops the database under every instance.
  it('the database away: engine reads and health go on, state routes 503 with Retry-After, the running job’s lines are held and stored in order once it is back', async () => {
    const f = await start('f', { DISPATCH_CLI: fixture('slow-lines.mjs') });
    const { proposalId: kept } = await json<{ proposalId: string }>(post(a, '/api/proposals', { title: 'acknowledged before the outage' }));
    const { proposalId } = await json<{ proposalId: string }>(post(f, '/api/proposals/generate', { project: 'harbor-lights', shotId: 'slow300' }));
    await waitForJobEvent(a, f, proposalId, (x) => x.summary === 'line 20', 'the job printing');
    // Writers go on through the outage, on two instances: what is acknowledged (201) must be kept.
    const acknowledged: string[] = [];
    let refusals = 0;
    let writing = true;
    const writers = [b, c].map(async (p, k) => {
      for (let i = 0; writing; i++) {
        const r = await post(p, '/api/proposals', { title: `writer ${k} #${i}` }).catch(() => null);
        if (r?.status === 201) acknowledged.push(((await r.json()) as { proposalId: string }).proposalId);
        else {
          refusals++;
          await r?.body?.cancel();
        }
        await new Promise((res) => setTimeout(res, 20));
      }
    });
    await waitFor(() => (acknowledged.length >= 5 ? true : undefined), 'writes before the outage');
    await cluster.pg.pause();
    try {
      const refused = await fetch(`${a.url}/api/proposals`);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await refused.json()).toMatchObject({ code: 'state_db_unreachable' });
      expect((await fetch(`${a.url}/api/projects`)).status).toBe(200);
      expect((await fetch(`${a.url}/api/health`)).status).toBe(200);
      // The status still answers, saying what it waits for.
      const status = await waitFor(async () => {
        const st = await json<{ instance: string; database: { reachable: boolean; error?: string } }>(fetch(`${a.url}/api/system-status`));
        return st.database.reachable ? undefined : st;
      }, 'the status to say the database is away');
      expect(status).toMatchObject({ instance: 'a', database: { backend: 'postgres', reachable: false, error: expect.any(String) } });
      await waitFor(async () => ((await fetch(`${a.url}/api/ready`)).status === 503 ? true : undefined), 'readiness to fail');
      // The job goes on printing meanwhile: its lines are held by its instance.
      await new Promise((r) => setTimeout(r, 1000));
    } finally {
      await cluster.pg.resume();
    }
    await waitFor(async () => ((await fetch(`${a.url}/api/ready`)).status === 200 ? true : undefined), 'readiness back');
    const before = acknowledged.length;
    await waitFor(() => (acknowledged.length >= before + 5 ? true : undefined), 'writes after the outage');
    writing = false;
    await Promise.all(writers);
    expect(refusals).toBeGreaterThan(0);
    const stored = new Set((await json<{ id: string }[]>(fetch(`${a.url}/api/proposals?limit=1000`))).map((p) => p.id));
    expect(acknowledged.filter((id) => !stored.has(id))).toEqual([]);
    const events = await waitFor(async () => {
      const all = await allEvents(a.url, `proposalId=${proposalId}`);
      return all.some((x) => x.summary.startsWith('dispatch_cli exited')) ? all : undefined;
    }, 'the job’s exit');
    const lines = events.filter((x) => x.summary.startsWith('line ')).map((x) => x.summary);
    expect(lines).toEqual(Array.from({ length: 300 }, (_, i) => `line ${i + 1}`));
    expect(events.at(-1)?.summary).toBe('dispatch_cli exited rc=0');
    expect((await json<{ state: string }>(fetch(`${b.url}/api/jobs/${proposalId}`))).state).toBe('exited ok');
    const proposals = await json<{ id: string }[]>(fetch(`${c.url}/api/proposals`));
    expect(proposals.some((p) => p.id === kept)).toBe(true);
  });
});
