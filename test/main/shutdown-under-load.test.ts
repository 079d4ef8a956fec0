/**
 * Graceful shutdown under load (api-decisions.md, "Network and safety
 * defaults": on SIGTERM stop accepting, end event streams, kill every job's process tree,
 * publish the exits, close the state database, exit 0). The compiled service runs as a
 * separate process with 16 streaming jobs of rel-c-tree.mjs (five processes each, half of
 * them ignoring SIGTERM, so the SIGKILL escalation runs), four event streams (one of them
 * stalled: it never reads) and eight loops of acknowledged writes (proposals and decisions,
 * clicks, take actions, workspace PUTs). Then SIGTERM:
 * - the process exits 0, within a generous ceiling (the time is printed, not asserted);
 * - no process of any job is left;
 * - every job's exit is published once and every job row is final (read afterwards from the
 *   database, read-only);
 * - every write answered 2xx (before the signal or after it) is in the database, with its event;
 * - every request sent after the signal gets a complete answer or a refused connection,
 *   never a hang, and never a connection cut in the middle of a request. (A new connection
 *   the kernel completed in the listen backlog just before the listener closed is reset by
 *   it, unread: a refusal too, counted apart.)
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, expect, it } from 'vitest';
import { type EngineEvent, waitFor } from '../helpers/events.js';
import { fixture, makeTempStore, startTestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';
import { isGone, killAll, request, requireBuild, sleep, startServiceProcess, tokenProcesses } from '../fixtures/rel-c-harness.js';

const JOBS = 16;
const PROJECT = 'harbor-lights';
const SCOPE = 'shutdown/test';
const TAKES = ['tk_0001', 'tk_0002', 'tk_0003', 'tk_0004', 'tk_0005', 'tk_0006', 'tk_0007', 'tk_0008'];
/**
 * The kill grace: the service's default. The trees that honour SIGTERM end by it (rc 143) only
 * once they run (Node's handler re-raises it): at the lowest CPU priority on a loaded machine
 * that took longer than a short grace (300 ms in jobs.test.ts), and the SIGKILL came first.
 * Those that ignore it wait it out.
 */
const KILL_GRACE_MS = 5000;
/** Ceiling on the shutdown: far above what it takes (about the kill grace), never a measure. */
const SHUTDOWN_CEILING_MS = KILL_GRACE_MS + 55_000;
/** A request unanswered after this long counts as a hang. */
const HANG_MS = 15_000;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
const onCleanup = (fn: () => unknown) => cleanups.push(fn);

/** How a request ended. */
type Outcome =
  | { kind: 'answer'; status: number; json: any }
  | { kind: 'refused' }
  /** A new connection reset before any answer byte: queued in the listen backlog when the listener closed. */
  | { kind: 'backlog' }
  /** The connection broke without an answer (reset, or closed while the request was pending). */
  | { kind: 'cut'; code: string }
  | { kind: 'hang' };

/** Writes acknowledged with a 2xx, each with its nonce (stored in its `extra` or state). */
interface Acked {
  proposals: Set<string>;
  decisions: Map<string, string>;
  clicks: Set<number>;
  takeActions: Set<string>;
  /** Workspace id → the last acknowledged revision and the nonce it stored. */
  workspaces: Map<string, { revision: number; n: string }>;
  total: number;
  /** Sent after the signal. */
  afterSignal: number;
  /** Sent before the signal, answered after it (in flight at the signal). */
  inFlight: number;
}

/** Writes sent before the signal that got no answer, or a refusal, before it, by lane: printed, and named when
 * too few writes were acknowledged. */
const preSignal: { lane: string; outcome: Outcome }[] = [];

/** Every request made once SIGTERM was sent, by outcome. */
const afterSignal: Outcome[] = [];
let signalled = false;

async function send(url: string, method: string, route: string, body?: unknown): Promise<Outcome> {
  const sentAfterSignal = signalled;
  let out: Outcome;
  try {
    const r = await request(url, method, route, body, HANG_MS);
    out = { kind: 'answer', status: r.status, json: r.json };
  } catch (err) {
    out = classify(err);
  }
  if (sentAfterSignal) afterSignal.push(out);
  return out;
}

function classify(err: unknown): Outcome {
  if (err instanceof Error && err.name === 'TimeoutError') return { kind: 'hang' };
  const code = String((err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code ?? (err as Error).message);
  return code === 'ECONNREFUSED' ? { kind: 'refused' } : { kind: 'cut', code };
}

/** A request on a fresh connection (no keep-alive), as a client arriving after the signal. */
function freshRequest(port: number, method: string, route: string, body?: unknown): Promise<Outcome> {
  return new Promise((resolve) => {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: route,
        agent: false,
        headers: payload === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ kind: 'answer', status: res.statusCode ?? 0, json: text ? JSON.parse(text) : undefined }));
        res.on('error', (err) => resolve(classify(err)));
      },
    );
    req.setTimeout(HANG_MS, () => {
      req.destroy();
      resolve({ kind: 'hang' });
    });
    req.on('error', (err) => {
      const out = classify(err);
      resolve(out.kind === 'cut' && out.code === 'ECONNRESET' ? { kind: 'backlog' } : out);
    });
    req.end(payload);
  });
}

type Answer = Extract<Outcome, { kind: 'answer' }>;
const is2xx = (o: Outcome): o is Answer => o.kind === 'answer' && o.status >= 200 && o.status < 300;

/** One writer loop of `lane` kind; runs until a request gets no answer (the service is gone). */
async function writer(url: string, lane: 'decisions' | 'clicks' | 'takes' | 'workspace', w: number, acked: Acked): Promise<void> {
  const count = (sentAfter: boolean) => {
    acked.total++;
    if (sentAfter) acked.afterSignal++;
    else if (signalled) acked.inFlight++;
  };
  let revision = 0;
  for (let i = 0; ; i++) {
    const n = `${lane}-${w}-${i}`;
    const after = signalled;
    let out: Outcome;
    if (lane === 'decisions') {
      out = await send(url, 'POST', '/api/proposals', { title: `shutdown ${n}` });
      if (is2xx(out)) {
        acked.proposals.add(out.json.proposalId);
        count(after);
        const decided = await send(url, 'POST', `/api/proposals/${out.json.proposalId}/decision`, { decision: 'approved', scope: SCOPE, extra: { n } });
        if (is2xx(decided)) {
          acked.decisions.set(n, out.json.proposalId);
          count(after);
        }
        out = decided;
      }
    } else if (lane === 'clicks') {
      out = await send(url, 'POST', '/api/clicks', { projectId: PROJECT, target: n });
      if (is2xx(out)) {
        acked.clicks.add(out.json.id);
        count(after);
      }
    } else if (lane === 'takes') {
      out = await send(url, 'POST', `/api/takes/${TAKES[i % TAKES.length]}/action`, { projectId: PROJECT, action: 'circled_toggled', scope: SCOPE, extra: { n } });
      if (is2xx(out)) {
        acked.takeActions.add(n);
        count(after);
      }
    } else {
      const wid = `shutdown-${w}`;
      out = await send(url, 'PUT', `/api/workspace-state/${wid}`, { revision, state: { n } });
      if (is2xx(out)) {
        revision = out.json.revision;
        acked.workspaces.set(wid, { revision, n });
        count(after);
      }
    }
    if (out.kind !== 'answer') {
      if (after || signalled) return;
      // Before the signal the service is up: a write with no answer is recorded (named if too
      // few writes are acknowledged), never a silent end of the lane, and the lane goes on. A
      // workspace lane ends: its PUT may have been stored, so its revision is no longer known.
      preSignal.push({ lane, outcome: out });
      if (lane === 'workspace' || preSignal.length >= 100) return;
      await sleep(20);
      continue;
    }
    // A refusal (503 while stopping) is a clean answer; anything else must be a success.
    if (!is2xx(out)) {
      const answer = out as Answer;
      if (!after && !signalled) preSignal.push({ lane, outcome: answer });
      expect(answer.status, JSON.stringify(answer.json)).toBe(503);
      await sleep(20);
    }
  }
}

it('SIGTERM under load: exit 0, no child left, every exit published, no acknowledged write lost, no request hangs', async () => {
  requireBuild();
  const store = makeTempStore('sample');
  onCleanup(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const token = `rel-c-${randomBytes(6).toString('hex')}`;
  const leaders: number[] = [];
  onCleanup(() => killAll([...leaders, ...tokenProcesses(token)]));
  const svc = await startServiceProcess(
    store,
    {
      DISPATCH_CLI: fixture('rel-c-tree.mjs'),
      REL_C_TOKEN: token,
      REL_C_BATCH: '5',
      REL_C_INTERVAL_MS: '10',
      CONSOLE_KILL_GRACE_MS: String(KILL_GRACE_MS),
      CONSOLE_CLICKS_PER_PROJECT: '1000000',
      // The stalled client stays connected until the signal: it is not dropped as slow first.
      CONSOLE_SSE_MAX_QUEUE_BYTES: String(256 * 1024 * 1024),
      // Every event kept: the jobs print until 200 writes are acknowledged, which on a busy machine
      // can be more lines than the default retention, and the first writes' events would be pruned.
      CONSOLE_EVENT_RETENTION: String(100_000_000),
    },
    onCleanup,
  );

  // Event streams: three readers and one client that never reads.
  const readers = ['', 'scopePrefix=engine/generation', 'scopePrefix=chat/proposals'].map((q) => new SseClient(`${svc.url}/api/events/stream${q ? `?${q}` : ''}`));
  onCleanup(() => {
    for (const c of readers) c.close();
  });
  const stalled = net.connect(svc.port, '127.0.0.1');
  onCleanup(() => stalled.destroy());
  stalled.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  stalled.pause();
  const stalledClosed = new Promise<void>((resolve) => stalled.once('close', () => resolve()));
  let stalledBytes = 0;
  stalled.on('error', () => {});

  // 16 jobs, half of whose trees ignore SIGTERM.
  const accepted = await Promise.all(Array.from({ length: JOBS }, (_, i) => request(svc.url, 'POST', '/api/proposals/generate', { project: PROJECT, model: i % 2 === 0 ? 'ignore-term' : undefined })));
  for (const a of accepted) expect(a.status, JSON.stringify(a.json)).toBe(202);
  const ids = accepted.map((a) => a.json.proposalId as string);
  const ignoring = new Set(ids.filter((_, i) => i % 2 === 0));
  leaders.push(...accepted.map((a) => a.json.pid as number));
  const all = readers[0] as SseClient;
  await all.until((c) => c.events.filter((e) => e.summary.startsWith('tree ')).length === JOBS, 'the 16 trees');
  // Five processes a tree once its helper, which reports the daemon and exits, is gone: a
  // helper still exiting when the tree line is printed (jobs run at a lower CPU priority,
  // CONSOLE_JOB_NICE) is waited for, not counted.
  const treeProcesses = () => [...new Set([...leaders, ...tokenProcesses(token)])];
  const processes = await waitFor(
    () => {
      const p = treeProcesses();
      return p.length === JOBS * 5 ? p : undefined;
    },
    `the ${JOBS * 5} processes of the 16 trees`,
  ).catch(() => treeProcesses());
  expect(processes.length).toBe(JOBS * 5);

  // Writers, two per kind, until the service is gone.
  const acked: Acked = { proposals: new Set(), decisions: new Map(), clicks: new Set(), takeActions: new Set(), workspaces: new Map(), total: 0, afterSignal: 0, inFlight: 0 };
  // A lane that fails an assertion ends; its error is kept (and thrown below), not left unhandled.
  const laneErrors: unknown[] = [];
  const lanes = (['decisions', 'clicks', 'takes', 'workspace'] as const).flatMap((lane) => [0, 1].map((w) => writer(svc.url, lane, w, acked).catch((err: unknown) => void laneErrors.push(err))));
  // However long 200 writes take on this machine (a ceiling, not a rate).
  await waitFor(() => (acked.total >= 200 ? true : undefined), '200 acknowledged writes').catch(() => undefined);
  if (acked.total < 200 && laneErrors.length > 0) throw laneErrors[0];
  expect(acked.total, `writes refused or unanswered before the signal: ${JSON.stringify(preSignal)}`).toBeGreaterThanOrEqual(200);
  const linesBefore = all.events.length;

  // The signal, and clients that keep arriving on fresh connections until the process is gone.
  const t0 = Date.now();
  signalled = true;
  svc.child.kill('SIGTERM');
  let exitedAt = 0;
  const exit = svc.exited.then((r) => {
    exitedAt = Date.now();
    return r;
  });
  const probes = (async () => {
    for (let i = 0; exitedAt === 0; i++) {
      const out = await Promise.all([freshRequest(svc.port, 'GET', '/api/health'), freshRequest(svc.port, 'POST', '/api/clicks', { projectId: PROJECT, target: `probe-${i}` })]);
      afterSignal.push(...out);
      const click = out[1] as Outcome;
      if (is2xx(click)) {
        acked.clicks.add(click.json.id);
        acked.total++;
        acked.afterSignal++;
      }
      await sleep(5);
    }
  })();
  const ceiling = sleep(SHUTDOWN_CEILING_MS).then(() => 'ceiling' as const);
  const ended = await Promise.race([exit, ceiling]);
  expect(ended, `the service did not stop within ${SHUTDOWN_CEILING_MS} ms: ${svc.stderr()}`).not.toBe('ceiling');
  expect(ended, svc.stderr()).toEqual([0, null]);
  const shutdownMs = exitedAt - t0;
  await Promise.all([probes, ...lanes]);
  if (laneErrors.length > 0) throw laneErrors[0];
  await Promise.all(readers.map((c) => c.done));
  // The stalled client held megabytes unread, and did not delay the exit; now read them all
  // to see its stream end.
  stalled.on('data', (b: Buffer) => (stalledBytes += b.length));
  stalled.resume();
  await stalledClosed;

  // No process of any job is left.
  const left = processes.filter((p) => !isGone(p));
  expect(left, 'processes of the jobs left after the shutdown').toEqual([]);
  expect(tokenProcesses(token)).toEqual([]);

  // Requests after the signal: answers (successes or 503) or refused connections; none hung,
  // none cut.
  const tally = { answered: 0, ok: 0, refusedWith503: 0, refused: 0, backlog: 0, cut: 0, hang: 0 };
  for (const o of afterSignal) {
    if (o.kind === 'answer') {
      tally.answered++;
      if (o.status >= 200 && o.status < 300) tally.ok++;
      else {
        expect(o.status, JSON.stringify(o.json)).toBe(503);
        expect(typeof o.json?.detail).toBe('string');
        tally.refusedWith503++;
      }
    } else tally[o.kind]++;
  }
  const cuts = afterSignal.filter((o) => o.kind === 'cut');
  expect(tally.hang, 'requests that hung after the signal').toBe(0);
  expect(cuts, 'connections cut without an answer after the signal').toEqual([]);

  // The database afterwards, read-only.
  const db = new Database(path.join(store.stateDir, 'console-state.db'), { readonly: true, fileMustExist: true });
  onCleanup(() => db.close());
  expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
  const jobs = db.prepare('select proposal_id as id, state, ended_at, rc, signal from jobs').all() as { id: string; state: string; ended_at: string | null; rc: number; signal: string }[];
  expect(jobs.map((j) => j.id).sort()).toEqual([...ids].sort());
  const rcs = new Map<number, number>();
  for (const j of jobs) {
    expect(j.state, j.id).toBe('exited failed');
    expect(j.ended_at, j.id).toEqual(expect.any(String));
    // SIGTERM ends the others; those that ignore it are ended by the SIGKILL escalation.
    expect(j.rc, j.id).toBe(ignoring.has(j.id) ? 137 : 143);
    rcs.set(j.rc, (rcs.get(j.rc) ?? 0) + 1);
  }
  const events = (db.prepare(`select data from events where scope = 'engine/generation' order by id`).all() as { data: string }[]).map((r) => JSON.parse(r.data) as EngineEvent);
  for (const id of ids) {
    const exits = events.filter((e) => e.payload.proposal_id === id && e.summary.startsWith('dispatch_cli exited'));
    expect(exits, `exit events of ${id}`).toHaveLength(1);
    // The exit follows every line of the job.
    const lastLine = events.filter((e) => e.detail?.startsWith(`${id} stdout`)).at(-1);
    if (lastLine) expect(Number((exits[0] as EngineEvent).id)).toBeGreaterThan(Number(lastLine.id));
  }

  // Every acknowledged write is stored, with its event.
  const col = <T>(sql: string, ...args: unknown[]) => db.prepare(sql).all(...args) as T[];
  const proposals = new Set(col<{ id: string }>('select id from proposals').map((r) => r.id));
  for (const id of acked.proposals) expect(proposals.has(id), `acknowledged proposal ${id}`).toBe(true);
  const decisions = new Map(col<{ n: string; id: string }>(`select json_extract(extra, '$.n') as n, proposal_id as id from decisions`).map((r) => [r.n, r.id]));
  const withEvents = new Set(col<{ n: string }>(`select json_extract(data, '$.payload.n') as n from events where scope = ?`, SCOPE).map((r) => r.n));
  for (const [n, id] of acked.decisions) {
    expect(decisions.get(n), `acknowledged decision ${n}`).toBe(id);
    expect(withEvents.has(n), `event of decision ${n}`).toBe(true);
  }
  const clicks = new Set(col<{ id: number }>('select id from clicks').map((r) => r.id));
  for (const id of acked.clicks) expect(clicks.has(id), `acknowledged click ${id}`).toBe(true);
  const takeActions = new Set(col<{ n: string }>(`select json_extract(extra, '$.n') as n from take_actions`).map((r) => r.n));
  for (const n of acked.takeActions) {
    expect(takeActions.has(n), `acknowledged take action ${n}`).toBe(true);
    expect(withEvents.has(n), `event of take action ${n}`).toBe(true);
  }
  for (const [wid, last] of acked.workspaces) {
    const row = db.prepare('select revision, state from workspace_states where wid = ?').get(wid) as { revision: number; state: string };
    // The last acknowledged PUT, or one more whose answer the shutdown cut off.
    expect([last.revision, last.revision + 1], `revision of ${wid}`).toContain(row.revision);
    if (row.revision === last.revision) expect(JSON.parse(row.state)).toEqual({ n: last.n });
  }

  console.log(
    `shutdown-under-load: SIGTERM with ${JOBS} jobs (${ignoring.size} ignoring SIGTERM), ${readers.length + 1} streams (1 stalled, ${(stalledBytes / 1048576).toFixed(1)} MB unread), ${lanes.length} writers; ` +
      `exit 0 in ${shutdownMs} ms; ${processes.length} processes ended, 0 left; ${jobs.length} exits published once ` +
      `(${[...rcs].map(([rc, k]) => `${k} rc ${rc}`).join(', ')}); ${linesBefore} events streamed before; ` +
      `${acked.total} acknowledged writes all stored (${acked.inFlight} of them in flight at the signal, ${acked.afterSignal} sent after it; ${preSignal.length} refused or unanswered before it); ` +
      `after the signal ${afterSignal.length} requests: ${tally.ok} 2xx, ${tally.refusedWith503} 503, ${tally.refused} refused, ${tally.backlog} reset in the listen backlog, ${tally.cut} cut, ${tally.hang} hung`,
  );
});

/** Reads one HTTP/1.1 answer with a Content-Length from `socket`. */
function readAnswer(socket: net.Socket): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  return new Promise((resolve, reject) => {
    let buf = Buffer.alloc(0);
    const onData = (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = buf.subarray(0, end).toString('latin1').split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      const length = Number(headers['content-length']);
      if (buf.length < end + 4 + length) return;
      socket.off('data', onData);
      resolve({ status: Number(statusLine?.split(' ')[1]), headers, body: JSON.parse(buf.subarray(end + 4, end + 4 + length).toString('utf8')) });
    };
    socket.on('data', onData);
    socket.once('error', reject);
  });
}

function connect(port: number): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

it('in flight at the stop: answered, with Connection: close; late on an open connection: 503; new connections: refused', async () => {
  // No job runs, so the stop waits only for the request in flight (at most the kill grace).
  const t = await startTestService({ env: { CONSOLE_KILL_GRACE_MS: '10000' } });
  onCleanup(() => t.close());
  const port = Number(new URL(t.url).port);

  // A: a write whose body is half sent when the stop begins.
  const body = JSON.stringify({ projectId: PROJECT, target: 'in-flight' });
  const a = await connect(port);
  onCleanup(() => a.destroy());
  a.write(`POST /api/clicks HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
  // B: a keep-alive connection, idle when the stop begins.
  const b = await connect(port);
  onCleanup(() => b.destroy());
  b.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  expect(await readAnswer(b)).toMatchObject({ status: 200, headers: { connection: 'keep-alive' } });
  await sleep(50); // A's headers and first bytes are read: its request is in flight

  const stopped = t.stop();
  let stoppedAt = 0;
  void stopped.then(() => (stoppedAt = Date.now()));
  await sleep(50);

  // Late request on the open connection: a clean refusal that closes it.
  const bClosed = new Promise<void>((r) => b.once('close', () => r()));
  b.write('GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  expect(await readAnswer(b)).toEqual({
    status: 503,
    headers: expect.objectContaining({ connection: 'close', 'content-type': 'application/json; charset=utf-8' }),
    body: { detail: 'the service is shutting down', code: 'shutting_down' },
  });
  await bClosed;
  // A new connection is refused.
  await expect(connect(port)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  // The request in flight completes (the stop waits for it), and its answer closes its connection.
  expect(stoppedAt).toBe(0);
  a.write(body.slice(10));
  const answer = await readAnswer(a);
  expect(answer).toMatchObject({ status: 201, headers: { connection: 'close' }, body: { target: 'in-flight' } });
  await stopped;

  const db = new Database(path.join(t.stateDir, 'console-state.db'), { readonly: true, fileMustExist: true });
  onCleanup(() => db.close());
  expect(db.prepare('select target from clicks where id = ?').get(answer.body.id)).toEqual({ target: 'in-flight' });
  console.log('shutdown-under-load [gate]: 1 request in flight answered 201 with Connection: close and stored; 1 late request answered 503; 1 new connection refused');
});
