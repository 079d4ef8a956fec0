/**
 * The fault-injection run (shared/design/cluster.md, "Under faults"), of cluster mode or of one
 * instance on the embedded SQLite database (systems.ts): under a mixed workload, instances are
 * SIGKILLed and started again, one is paused (SIGSTOP) past a timeout and continued (past the
 * instance timeout in cluster mode, past the clients' request timeout with SQLite), and the
 * database fails and comes back (PostgreSQL stops at once, an immediate shutdown; SQLite's disk
 * fills). With SQLite the one instance itself is killed and paused: nothing answers meanwhile.
 * Every random choice comes from one seed, printed, so a failing run can be run again.
 *
 * The workload: proposals created and decided, take actions, memory toggles, clicks, workspace
 * writes, internal bus publishes, a few generation jobs a second (most short, some long enough
 * to be caught by a fault), and three stream readers that resume with `Last-Event-ID` on any
 * live instance, as EventSource does. Each write carries an operation id, so that an
 * acknowledged write can be found again; a write that was refused or timed out is not
 * acknowledged, and may or may not have happened.
 *
 * Afterwards, with every fault ended, the invariants are checked from outside, over HTTP:
 * 1. every acknowledged write is visible exactly once, on every instance;
 * 2. every stream's ids strictly increase with no duplicate, and each reader got every stored
 *    event between its first and its last;
 * 3. every accepted job is in one final state, listed identically on every instance, and its
 *    state agrees with its events (`lost` with one lost event and nothing after it, `exited`
 *    with all its lines once and in order);
 * 4. no job process is left;
 * 5. every instance is ready;
 * 6. the take states on every instance are the take events replayed in id order.
 */
import { randomUUID } from 'node:crypto';
import { jobEventProblems, waitFor, type EngineEvent, type JobView } from '../helpers/events.js';
import { alive } from '../helpers/cluster.js';
import type { ServiceProcess } from '../helpers/service-process.js';
import type { SseClient } from '../helpers/sse.js';
import { startChaosSystem, type ChaosBackend } from './systems.js';

export interface ChaosOptions {
  /** How long faults and the workload run, s. */
  readonly seconds: number;
  /** The seed of every random choice. */
  readonly seed: number;
  /** Progress lines (what happens, when). */
  readonly log?: (line: string) => void;
  /** Three instances on PostgreSQL (default), or one on SQLite (systems.ts). */
  readonly backend?: ChaosBackend;
}

/** What a run did and found. */
export interface ChaosReport {
  readonly backend: ChaosBackend;
  readonly seed: number;
  readonly seconds: number;
  readonly faults: Record<'kills' | 'pauses' | 'databaseStops', number>;
  /** Acknowledged writes by kind. */
  readonly acknowledged: Record<string, number>;
  /** Writes refused (503, 5xx, reset, timed out): not acknowledged. */
  readonly refused: number;
  readonly jobs: Record<string, number>;
  readonly events: number;
  readonly reconnects: number;
  /** Broken invariants; empty when every one holds. */
  readonly violations: string[];
}

/** mulberry32: a small seeded generator, enough for choosing faults and operations. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROJECT = 'harbor-lights';
/** The takes of beat b01 (shots sh010 and sh020, as the sample store has them). */
const TAKES = ['tk_0001', 'tk_0002', 'tk_0003', 'tk_0004', 'tk_0005'];
const MEMORY = ['style-palette', 'mara-wardrobe', 'handheld-only'];
const WORKSPACES = ['w1', 'w2', 'w3'];
const REQUEST_MS = 8000;

interface Node {
  readonly id: string;
  proc: ServiceProcess | null;
  paused: boolean;
  /** Being started (or waiting to be): not a target. */
  down: boolean;
}

interface Reader {
  readonly ids: number[];
  reconnects: number;
  client: SseClient | null;
  on: Node | null;
  /** How many of `client`'s events were taken. */
  taken: number;
  /** Each connection: the index in `ids` its first event took, and the Last-Event-ID it resumed from (null: none). */
  readonly connections: { at: number; from: number | null }[];
}

/** Runs the workload under faults for `seconds`, then checks the invariants. */
export async function runChaos(opts: ChaosOptions): Promise<ChaosReport> {
  const random = generator(opts.seed);
  const between = (lo: number, hi: number) => lo + random() * (hi - lo);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;
  const log = opts.log ?? (() => {});
  const t0 = Date.now();
  const say = (line: string) => log(`[${((Date.now() - t0) / 1000).toFixed(1)} s] ${line}`);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  const backend = opts.backend ?? 'cluster';
  const system = await startChaosSystem(backend, REQUEST_MS, opts.seconds);
  const nodes: Node[] = system.ids.map((id) => ({ id, proc: null, paused: false, down: true }));
  const faults = { kills: 0, pauses: 0, databaseStops: 0 };
  const acknowledged: Record<string, number> = {};
  let refused = 0;
  let databaseDown = false;
  const violations: string[] = [];

  // What the workload had acknowledged.
  const ackedOps = new Set<string>();
  const ackedProposals = new Set<string>();
  const ackedPublishes = new Map<string, string>(); // event id -> op
  const ackedClicks = new Set<string>();
  const workspaceRevisions = new Map<string, number[]>();
  const accepted = new Map<string, number>(); // proposal id -> pid

  const startNode = async (n: Node): Promise<void> => {
    n.down = true;
    for (;;) {
      try {
        n.proc = await system.start(n.id);
        n.paused = false;
        n.down = false;
        return;
      } catch (err) {
        say(`${n.id} did not start (${(err as Error).message.split('\n')[0]}): again`);
        await sleep(1000);
      }
    }
  };
  await Promise.all(nodes.map(startNode));
  say(`seed ${opts.seed}: ${nodes.length} ${backend} instance(s) up`);

  const targets = () => nodes.filter((n) => n.proc !== null && !n.down && !n.paused);
  const call = async (method: string, path: string, body?: unknown): Promise<{ status: number; json: unknown } | null> => {
    const live = targets();
    if (live.length === 0) return null;
    const n = pick(live);
    try {
      const r = await fetch(`${n.proc!.url}${path}`, {
        method,
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_MS),
      });
      const text = await r.text();
      return { status: r.status, json: text ? (JSON.parse(text) as unknown) : null };
    } catch {
      return null;
    }
  };
  const ack = (kind: string) => (acknowledged[kind] = (acknowledged[kind] ?? 0) + 1);

  let running = true;
  const stopAt = t0 + opts.seconds * 1000;

  // --- the workload -------------------------------------------------------------------------
  const operations: [number, () => Promise<void>][] = [
    [
      20,
      async () => {
        const r = await call('POST', '/api/proposals', { title: `chaos ${randomUUID()}` });
        if (r?.status === 201) {
          ackedProposals.add((r.json as { proposalId: string }).proposalId);
          ack('proposals');
        } else refused++;
      },
    ],
    [
      15,
      async () => {
        if (ackedProposals.size === 0) return;
        const id = pick([...ackedProposals]);
        const op = randomUUID();
        const r = await call('POST', `/api/proposals/${id}/${pick(['approve', 'reject', 'defer'])}`, { extra: { op } });
        if (r?.status === 200) {
          ackedOps.add(op);
          ack('decisions');
        } else refused++;
      },
    ],
    [
      20,
      async () => {
        const op = randomUUID();
        const r = await call('POST', `/api/takes/${pick(TAKES)}/action`, { projectId: PROJECT, action: pick(['circled_toggled', 'circled_toggled', 'rejected', 'marked_primary']), extra: { op } });
        if (r?.status === 200) {
          ackedOps.add(op);
          ack('takeActions');
        } else refused++;
      },
    ],
    [
      10,
      async () => {
        const op = randomUUID();
        const r = await call('POST', `/api/memory/${pick(MEMORY)}/toggle`, { on: random() < 0.5, extra: { op } });
        if (r?.status === 200) {
          ackedOps.add(op);
          ack('toggles');
        } else refused++;
      },
    ],
    [
      15,
      async () => {
        const op = randomUUID();
        const r = await call('POST', '/api/clicks', { projectId: PROJECT, target: `chaos-${op}` });
        if (r?.status === 201) {
          ackedClicks.add(`chaos-${op}`);
          ack('clicks');
        } else refused++;
      },
    ],
    [
      10,
      async () => {
        const wid = pick(WORKSPACES);
        const current = await call('GET', `/api/workspace-state/${wid}`);
        const revision = current?.status === 200 ? (current.json as { revision: number }).revision : current?.status === 404 ? 0 : null;
        if (revision === null) return void refused++;
        const r = await call('PUT', `/api/workspace-state/${wid}`, { revision, state: { op: randomUUID() } });
        if (r?.status === 200) {
          const list = workspaceRevisions.get(wid) ?? [];
          list.push((r.json as { revision: number }).revision);
          workspaceRevisions.set(wid, list);
          ack('workspaceWrites');
        } else if (r?.status !== 409) refused++;
      },
    ],
    [
      10,
      async () => {
        const op = randomUUID();
        const r = await call('POST', '/api/internal/bus', { severity: 'info', scope: 'test/chaos', summary: `publish ${op}` });
        if (r?.status === 202) {
          ackedPublishes.set((r.json as { id: string }).id, op);
          ack('publishes');
        } else refused++;
      },
    ],
  ];
  const weightSum = operations.reduce((s, [w]) => s + w, 0);
  const writer = async () => {
    while (running) {
      let x = random() * weightSum;
      const op = operations.find(([w]) => (x -= w) < 0)?.[1] ?? (operations[0]![1] as () => Promise<void>);
      await op();
      await sleep(between(20, 120));
    }
  };
  const jobs = async () => {
    while (running) {
      // Most jobs end within a second or two; one in eight runs long enough to meet a fault.
      const lines = random() < 0.125 ? Math.floor(between(1500, 3000)) : Math.floor(between(30, 150));
      const r = await call('POST', '/api/proposals/generate', { project: PROJECT, shotId: `slow${lines}` });
      if (r?.status === 202) {
        const { proposalId, pid } = r.json as { proposalId: string; pid: number };
        accepted.set(proposalId, pid);
        ack('jobs');
      } else refused++;
      await sleep(between(300, 900));
    }
  };

  // --- the stream readers: resume with Last-Event-ID on any live instance --------------------
  const readers: Reader[] = Array.from({ length: 3 }, () => ({ ids: [], reconnects: 0, client: null, on: null, taken: 0, connections: [] }));
  const drain = (r: Reader) => {
    if (r.client === null) return;
    const evs = r.client.events;
    for (; r.taken < evs.length; r.taken++) r.ids.push(Number((evs[r.taken] as EngineEvent).id));
  };
  const reconnect = (r: Reader) => {
    drain(r);
    r.client?.close();
    const live = targets();
    if (live.length === 0) {
      r.client = null;
      r.on = null;
      return;
    }
    const n = pick(live);
    const last = r.ids.at(-1);
    r.client = system.stream(n.proc!, last === undefined ? {} : { 'Last-Event-ID': String(last) });
    r.connections.push({ at: r.ids.length, from: last ?? null });
    r.on = n;
    r.taken = 0;
    r.reconnects++;
  };
  const reading = async () => {
    while (running) {
      for (const r of readers) {
        drain(r);
        // Its instance went away (killed, paused, restarted) or the stream ended: elsewhere.
        if (r.client === null || r.client.ended || r.on === null || r.on.down || r.on.paused) reconnect(r);
      }
      await sleep(100);
    }
  };

  // --- the faults ------------------------------------------------------------------------------
  const kills = async () => {
    while (running) {
      await sleep(between(8000, 15000));
      if (!running) break;
      const candidates = targets();
      if (candidates.length < system.minLive) continue;
      const n = pick(candidates);
      n.down = true;
      n.proc!.child.kill('SIGKILL');
      await n.proc!.exited;
      faults.kills++;
      say(`${n.id} SIGKILLed`);
      await sleep(between(1000, 3000));
      await startNode(n);
      say(`${n.id} started again`);
    }
  };
  const pauses = async () => {
    const every = Math.max(40, opts.seconds / 3) * 1000;
    await sleep(between(5000, Math.min(every, opts.seconds * 500)));
    while (running) {
      const candidates = targets();
      // None to take now (the one SQLite instance down after a kill): soon again, not a whole period later.
      if (candidates.length < system.minLive) {
        await sleep(500);
        continue;
      }
      const n = pick(candidates);
      n.paused = true;
      n.proc!.child.kill('SIGSTOP');
      faults.pauses++;
      const ms = system.pause.ms + between(1500, 3500);
      say(`${n.id} paused for ${(ms / 1000).toFixed(1)} s, past ${system.pause.past}`);
      await sleep(ms);
      n.proc!.child.kill('SIGCONT');
      n.paused = false;
      say(`${n.id} continued`);
      await sleep(between(every * 0.75, every * 1.25));
    }
  };
  const databaseStops = async () => {
    const every = Math.max(30, opts.seconds / 2.5) * 1000;
    await sleep(between(8000, Math.min(every, opts.seconds * 600)));
    while (running) {
      const ms = between(3000, 6000);
      databaseDown = true;
      const what = await system.failDatabase();
      faults.databaseStops++;
      say(`${what} for ${(ms / 1000).toFixed(1)} s`);
      await sleep(ms);
      await system.restoreDatabase();
      databaseDown = false;
      say('the database back');
      await sleep(between(every * 0.75, every * 1.25));
    }
  };

  const work = [writer(), writer(), writer(), writer(), jobs(), reading()];
  const chaos = [kills(), pauses(), databaseStops()];
  await sleep(Math.max(0, stopAt - Date.now()));
  running = false;
  await Promise.all(work);
  await Promise.all(chaos);
  if (databaseDown) await system.restoreDatabase();
  say('faults and workload stopped; waiting for every instance to settle');

  try {
    // Every instance up, not paused, and ready.
    for (const n of nodes) {
      if (n.paused) n.proc?.child.kill('SIGCONT');
      n.paused = false;
      if (n.proc === null || n.proc.child.exitCode !== null || n.proc.child.signalCode !== null) await startNode(n);
    }
    const urls = () => nodes.map((n) => n.proc!.url);
    for (const n of nodes) {
      const url = n.proc!.url;
      let last = '';
      await waitFor(
        async () => {
          const r = await fetch(`${url}/api/ready`).catch((err: Error) => err);
          if (r instanceof Error) last = r.message;
          else if (r.status === 200) return true;
          else last = `${r.status} ${await r.text()}`;
          return undefined;
        },
        `${url} ready`,
        120_000,
      ).catch(() => violations.push(`5. ${n.id} (${url}) not ready: ${last}; its stderr ends: ${n.proc!.stderr().slice(-1500)}`));
    }
    // Every accepted job in a final state (short jobs end, long ones end or are lost).
    await waitFor(
      async () => {
        const stillRunning = (await (await fetch(`${urls()[0]}/api/jobs?state=running&limit=500`)).json()) as JobView[];
        return stillRunning.some((j) => accepted.has(j.proposalId)) ? undefined : true;
      },
      'every accepted job in a final state',
      180_000,
    ).catch(() => violations.push('3. not every accepted job reached a final state within 180 s'));
    // Delivery caught up everywhere: a marker from each instance reaches every instance.
    const markers: string[] = [];
    for (const url of urls()) {
      const r = await fetch(`${url}/api/internal/bus`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ severity: 'info', scope: 'test/chaos', summary: 'marker' }),
      });
      markers.push(((await r.json()) as { id: string }).id);
    }
    const lastMarker = Math.max(...markers.map(Number));
    for (const r of readers) {
      if (r.client !== null) await r.client.until((c) => c.events.some((e) => Number(e.id) >= lastMarker), 'the markers on a reader', 60_000).catch(() => reconnect(r));
    }
    for (const r of readers) {
      drain(r);
      r.client?.close();
    }

    // 1 and 6: the stored events, identical on every instance.
    const eventsOn = await Promise.all(urls().map((url) => allStored(url)));
    const stored = eventsOn[0] as EngineEvent[];
    for (const [i, evs] of eventsOn.entries()) {
      if (evs.length !== stored.length || evs.some((e, k) => e.id !== stored[k]?.id || e.summary !== stored[k]?.summary))
        violations.push(`1. the events on ${nodes[i]!.id} differ from ${nodes[0]!.id}'s`);
    }
    const opCount = new Map<string, number>();
    for (const e of stored) {
      const op = e.payload.op;
      if (typeof op === 'string') opCount.set(op, (opCount.get(op) ?? 0) + 1);
    }
    for (const op of ackedOps) if (opCount.get(op) !== 1) violations.push(`1. acknowledged write ${op} found ${opCount.get(op) ?? 0} times`);
    const byId = new Map(stored.map((e) => [e.id, e]));
    for (const [id, op] of ackedPublishes) if (byId.get(id)?.summary !== `publish ${op}`) violations.push(`1. acknowledged publish ${op} (id ${id}) not stored as such`);
    for (const url of urls()) {
      const proposals = new Set(((await (await fetch(`${url}/api/proposals?limit=1000`)).json()) as { id: string }[]).map((p) => p.id));
      // The list is bounded (1000 newest): the older acknowledged ones are looked up one by one.
      for (const id of ackedProposals) {
        if (proposals.has(id)) continue;
        if ((await fetch(`${url}/api/proposals/${id}/decisions`)).status !== 200) violations.push(`1. acknowledged proposal ${id} missing on ${url}`);
      }
      const clicks = ((await (await fetch(`${url}/api/clicks?projectId=${PROJECT}&limit=10000`)).json()) as { target: string }[]).map((c) => c.target);
      const clickCount = new Map<string, number>();
      for (const t of clicks) clickCount.set(t, (clickCount.get(t) ?? 0) + 1);
      for (const t of ackedClicks) if (clickCount.get(t) !== 1) violations.push(`1. acknowledged click ${t} found ${clickCount.get(t) ?? 0} times on ${url}`);
      for (const [wid, revisions] of workspaceRevisions) {
        if (new Set(revisions).size !== revisions.length) violations.push(`1. workspace ${wid}: one revision acknowledged twice (${revisions.join(',')})`);
        const now = (await (await fetch(`${url}/api/workspace-state/${wid}`)).json()) as { revision: number };
        if (now.revision < Math.max(...revisions)) violations.push(`1. workspace ${wid} at revision ${now.revision} on ${url}, below an acknowledged ${Math.max(...revisions)}`);
      }
    }
    // 6: take states = take events replayed in id order, on every instance.
    const expected = new Map(TAKES.map((t) => [t, { primary: false, circled: false, rejected: false }]));
    const shotOf = new Map<string, string>();
    for (const url of urls().slice(0, 1)) {
      for (const t of (await (await fetch(`${url}/api/beats/b01/takes?projectId=${PROJECT}`)).json()) as { take_id: string; shot_id: string }[]) shotOf.set(t.take_id, t.shot_id);
    }
    for (const e of stored) {
      if (e.scope !== 'engine' || !e.summary.startsWith('Take ') || e.severity === 'fallback') continue;
      const take = e.payload.take_id as string;
      const s = expected.get(take);
      if (!s) continue;
      if (e.payload.action === 'circled_toggled') s.circled = !s.circled;
      else if (e.payload.action === 'rejected') s.rejected = true;
      else if (e.payload.action === 'marked_primary') {
        for (const [other, o] of expected) if (shotOf.get(other) === shotOf.get(take)) o.primary = other === take;
      }
    }
    for (const url of urls()) {
      const takes = (await (await fetch(`${url}/api/beats/b01/takes?projectId=${PROJECT}`)).json()) as { take_id: string; primary: boolean; circled: boolean; rejected: boolean }[];
      for (const t of takes) {
        const want = expected.get(t.take_id);
        if (want && (want.primary !== t.primary || want.circled !== t.circled || want.rejected !== t.rejected)) {
          violations.push(`6. ${t.take_id} on ${url}: ${JSON.stringify({ primary: t.primary, circled: t.circled, rejected: t.rejected })}, replayed ${JSON.stringify(want)}`);
        }
      }
    }

    // 2: each reader's ids strictly increase, and nothing stored between its first and last is missing.
    const storedIds = stored.map((e) => Number(e.id));
    for (const [k, r] of readers.entries()) {
      const back = r.ids.findIndex((id, i) => i > 0 && id <= (r.ids[i - 1] as number));
      if (back > 0) {
        // Named with the connection it came on: where that one began and what it resumed from.
        const conn = [...r.connections].reverse().find((c) => c.at <= back);
        violations.push(
          `2. reader ${k}: ids not strictly increasing: ${r.ids[back]} after ${r.ids[back - 1]} (ids ${r.ids.slice(Math.max(0, back - 3), back + 3).join(',')}; connection from index ${conn?.at} resumed from ${conn?.from ?? 'none'})`,
        );
      }
      if (r.ids.length === 0) continue;
      const got = new Set(r.ids);
      const first = r.ids[0] as number;
      const last = r.ids.at(-1) as number;
      const missing = storedIds.filter((id) => id >= first && id <= last && !got.has(id));
      if (missing.length > 0) violations.push(`2. reader ${k}: ${missing.length} stored events between ${first} and ${last} never received (first ${missing.slice(0, 5).join(',')})`);
      const unknown = r.ids.filter((id) => !byId.has(String(id)));
      if (unknown.length > 0) violations.push(`2. reader ${k}: ${unknown.length} received ids not stored (${unknown.slice(0, 5).join(',')})`);
    }

    // 3: jobs in one final state, the same on every instance, agreeing with their events.
    const jobsByState: Record<string, number> = {};
    for (const id of accepted.keys()) {
      const seen = await Promise.all(
        urls().map(async (url) => {
          const r = await fetch(`${url}/api/jobs/${id}`);
          return r.status === 200 ? ((await r.json()) as JobView) : null;
        }),
      );
      const j = seen[0];
      if (!j) {
        violations.push(`3. accepted job ${id} not found`);
        continue;
      }
      jobsByState[j.state] = (jobsByState[j.state] ?? 0) + 1;
      if (j.state === 'running') violations.push(`3. job ${id} still running; ${await whatEachSees(urls(), id, accepted.get(id))}`);
      for (const [i, o] of seen.entries()) {
        if (!o || o.state !== j.state || o.rc !== j.rc) violations.push(`3. job ${id}: ${j.state} on ${nodes[0]!.id}, ${o?.state ?? 'missing'} on ${nodes[i]!.id}`);
      }
      for (const p of await jobEventProblems(urls()[0] as string, j)) violations.push(`3. ${p}`);
    }
    // 4: no job process left.
    await waitFor(() => ([...accepted.values()].every((pid) => !alive(pid)) ? true : undefined), 'every job process gone', 30_000).catch(() =>
      violations.push(`4. job processes left: ${[...accepted.values()].filter(alive).join(' ')}`),
    );

    const report: ChaosReport = {
      backend,
      seed: opts.seed,
      seconds: opts.seconds,
      faults,
      acknowledged,
      refused,
      jobs: jobsByState,
      events: stored.length,
      reconnects: readers.reduce((s, r) => s + r.reconnects, 0),
      violations,
    };
    say(`done: ${JSON.stringify({ ...report, violations: violations.length })}`);
    return report;
  } finally {
    for (const r of readers) r.client?.close();
    for (const pid of accepted.values()) system.leftovers.push(pid);
    await system.stop();
  }
}

/** Every stored event (paged). */
async function allStored(url: string): Promise<EngineEvent[]> {
  const out: EngineEvent[] = [];
  let cursor = '0';
  for (;;) {
    const page = (await (await fetch(`${url}/api/events?limit=500&sinceId=${cursor}`)).json()) as EngineEvent[];
    out.push(...page);
    if (page.length < 500) return out;
    cursor = (page.at(-1) as EngineEvent).id;
  }
}

/**
 * For a job left running: each instance's record of it, its bus backlog, output gate and database
 * state, the end of the first page of its stored events, and whether the job's process is alive (what a rerun
 * of the seed would otherwise have to find).
 */
async function whatEachSees(urls: readonly string[], id: string, pid: number | undefined): Promise<string> {
  const parts: string[] = [`process ${pid ?? '?'} ${pid !== undefined && alive(pid) ? 'alive' : 'gone'}`];
  for (const url of urls) {
    try {
      const job = await (await fetch(`${url}/api/jobs/${id}`)).text();
      const status = (await (await fetch(`${url}/api/system-status`)).json()) as { bus?: unknown; database?: unknown; instance?: unknown };
      const events = (await (await fetch(`${url}/api/jobs/${id}/events?limit=1000`)).json()) as EngineEvent[];
      const last = events.slice(-3).map((e) => `${e.id} ${e.summary}`);
      parts.push(
        `${url}: job ${job.slice(0, 600)}; bus ${JSON.stringify(status.bus).slice(0, 600)}; database ${JSON.stringify(status.database).slice(0, 300)}; instance ${JSON.stringify(status.instance).slice(0, 200)}; ${events.length} events in its first page (up to 1,000), the page's last ${JSON.stringify(last)}`,
      );
    } catch (err) {
      parts.push(`${url}: ${(err as Error).message}`);
    }
  }
  return parts.join(' | ');
}
