/**
 * The bounded load test: the service as its own process, 32
 * concurrent generation jobs streaming output, 20 SSE clients, and read traffic at once.
 * Asserts no lost or duplicated event on any client, no 5xx, every job reaching a final
 * state, and no child process left. It asserts no timing.
 *
 * Then a short storm on the same service: 16 jobs flooding their pipes as fast as
 * they can, 2 stream clients and a reader. Asserts no line lost, each job's lines in order on
 * each pipe, both clients receiving exactly what is stored, and every read answered:
 * correctness under load, not timing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { fixture, makeTempStore, REPO_ROOT } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';

const JOBS = 32;
const CLIENTS = 20;
const LINES = 1000;
const TOOL = fixture('load-tool.mjs');
/** The storm: flooding jobs, lines each on stdout (a tenth as many on stderr), stream clients. */
const FLOOD_JOBS = 16;
const FLOOD_LINES = 4000;
const FLOOD_CLIENTS = 2;

let service: ChildProcess;
let url: string;
let tmp: string;

beforeAll(async () => {
  const store = makeTempStore();
  tmp = store.tmp;
  const port = await freePort();
  service = spawn(process.execPath, [path.join(REPO_ROOT, 'dist', 'main', 'index.js')], {
    env: {
      PATH: process.env.PATH,
      PORT: String(port),
      CONSOLE_DATA_DIR: store.dataDir,
      CONSOLE_STATE_DIR: store.stateDir,
      DISPATCH_CLI: TOOL,
      LOAD_LINES: String(LINES),
      LOG_LEVEL: 'warn',
      // The clients share the machine with 32 jobs: let them lag rather than be dropped.
      CONSOLE_SSE_MAX_QUEUE_BYTES: String(256 * 1024 * 1024),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  url = `http://127.0.0.1:${port}`;
  await waitFor(async () => ((await fetch(`${url}/api/health`).catch(() => null))?.ok ? true : undefined), 'the service');
});

afterAll(async () => {
  if (service.exitCode === null) {
    const exited = new Promise((r) => service.once('exit', r));
    service.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

it('streams 32 jobs to 20 clients with reads going on, losing and duplicating nothing', async () => {
  const clients = Array.from({ length: CLIENTS }, () => new SseClient(`${url}/api/events/stream`));
  await Promise.all(clients.map((c) => c.until((x) => x.frames.length > 0, 'the retry frame')));
  const startId = Number((await allEvents(url)).at(-1)?.id ?? 0);

  // Read traffic, all the time the jobs run.
  const statuses = new Map<number, number>();
  let reading = true;
  const readPaths = [
    '/api/projects',
    '/api/projects/harbor-lights/episodes',
    '/api/projects/harbor-lights/episodes/1/scenes/main/beats',
    '/api/beats/b01/takes?projectId=harbor-lights',
    '/api/beats/b01/lineage?projectId=harbor-lights&takeId=tk_0004',
    '/api/events?limit=50&scopePrefix=engine/generation',
    '/api/jobs?limit=20',
    '/api/system-status',
    '/api/memory',
  ];
  // A fresh connection per read: this process is busy parsing a million frames, so a pooled
  // client's idle-socket timer can fire late and reuse a socket the server already closed.
  const readers = Array.from({ length: 4 }, async (_v, r) => {
    for (let i = r; reading; i++) {
      const res = await rawRequest(url, readPaths[i % readPaths.length] as string);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
    }
  });

  const answers = await Promise.all(
    Array.from({ length: JOBS }, (_v, i) =>
      fetch(`${url}/api/proposals/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ project: 'harbor-lights', shotId: i % 8 === 7 ? 'fail' : `sh${i}` }),
      }),
    ),
  );
  const accepted = (await Promise.all(answers.map((a) => a.json()))) as { proposalId: string }[];
  expect(answers.map((a) => a.status)).toEqual(Array(JOBS).fill(202));
  const ids = accepted.map((a) => a.proposalId);

  const exitsSeen = (c: SseClient) => c.events.filter((e) => e.summary.startsWith('dispatch_cli exited')).length;
  await Promise.all(clients.map((c) => c.until((x) => exitsSeen(x) === JOBS, 'every exit event')));
  reading = false;
  await Promise.all(readers);
  for (const c of clients) c.close();

  // The stored record: every event of this storm, in id order.
  const stored = (await allEvents(url, '', String(startId))).filter((e) => e.scope === 'engine/generation');
  for (const [i, c] of clients.entries()) {
    const got = c.events.filter((e) => Number(e.id) > startId && e.scope === 'engine/generation');
    // No duplicate and nothing out of order: ids strictly increase on every client.
    const numeric = got.map((e) => Number(e.id));
    expect(
      numeric.every((n, k) => k === 0 || n > (numeric[k - 1] as number)),
      `client ${i} order`,
    ).toBe(true);
    // Nothing lost: exactly the stored events.
    expect(
      got.map((e) => e.id),
      `client ${i} completeness`,
    ).toEqual(stored.map((e) => e.id));
  }

  // Per job: spawn, every line numbered 1..n per pipe with no gap, then the exit.
  for (const id of ids) {
    const mine = stored.filter((e) => e.payload.proposal_id === id || e.detail?.startsWith(`${id} `));
    const kinds = mine.map((e) => (e.summary.startsWith('dispatch_cli spawned') ? 'spawn' : e.summary.startsWith('dispatch_cli exited') ? 'exit' : 'line'));
    expect(kinds[0]).toBe('spawn');
    expect(kinds.at(-1)).toBe('exit');
    expect(kinds.filter((k) => k === 'exit')).toHaveLength(1);
    const numbers = (pipe: string) => mine.filter((e) => e.detail?.startsWith(`${id} ${pipe} line `)).map((e) => Number(e.detail!.split(' ').at(-1)));
    expect(numbers('stdout')).toEqual(Array.from({ length: LINES }, (_v, k) => k + 1));
    expect(numbers('stderr')).toEqual(Array.from({ length: LINES / 10 }, (_v, k) => k + 1));
  }

  // Every job reached a final state, with the right outcome.
  // A fresh connection, as the reads above: a pooled socket idle through the checks may be one the server closed.
  const jobs = (await rawRequest(url, '/api/jobs?limit=100')).json() as { proposalId: string; state: string; argv: string[] }[];
  for (const id of ids) {
    const job = jobs.find((j) => j.proposalId === id);
    expect(job?.state).toBe(job?.argv.includes('fail') ? 'exited failed' : 'exited ok');
  }

  // No 5xx on the read traffic.
  expect([...statuses.keys()].filter((s) => s >= 500)).toEqual([]);
  expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBeGreaterThan(0);

  // No child process left.
  expect(processesRunning(TOOL)).toEqual([]);
  const failed = stored.filter((e: EngineEvent) => e.severity === 'failure');
  expect(failed).toHaveLength(ids.filter((_id, i) => i % 8 === 7).length);
});

it('a storm of 16 flooding jobs, 2 stream clients and a reader: no line lost, each job in order, every read answered', async () => {
  const clients = Array.from({ length: FLOOD_CLIENTS }, () => new SseClient(`${url}/api/events/stream`));
  await Promise.all(clients.map((c) => c.until((x) => x.frames.length > 0, 'the retry frame')));
  const startId = Number((await allEvents(url)).at(-1)?.id ?? 0);

  // One reader, sequential, all the time the storm lasts: every read must be answered.
  const reads = { sent: 0, answered: 0, statuses: new Map<number, number>(), errors: [] as string[] };
  let reading = true;
  const readPaths = ['/api/projects/harbor-lights/episodes/1/scenes/main/beats', '/api/beats/b01/takes?projectId=harbor-lights', '/api/jobs?limit=20', '/api/events?limit=200', '/api/system-status'];
  const reader = (async () => {
    for (let i = 0; reading; i++) {
      reads.sent++;
      try {
        const res = await rawRequest(url, readPaths[i % readPaths.length] as string);
        reads.answered++;
        reads.statuses.set(res.status, (reads.statuses.get(res.status) ?? 0) + 1);
      } catch (err) {
        reads.errors.push(String(err));
      }
    }
  })();

  const answers = await Promise.all(
    Array.from({ length: FLOOD_JOBS }, () =>
      fetch(`${url}/api/proposals/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ project: 'harbor-lights', shotId: `flood${FLOOD_LINES}` }),
      }),
    ),
  );
  expect(answers.map((a) => a.status)).toEqual(Array(FLOOD_JOBS).fill(202));
  const ids = ((await Promise.all(answers.map((a) => a.json()))) as { proposalId: string }[]).map((a) => a.proposalId);
  const exitsSeen = (c: SseClient) => c.events.filter((e) => e.summary.startsWith('dispatch_cli exited') && ids.includes(e.payload.proposal_id as string)).length;
  await Promise.all(clients.map((c) => c.until((x) => exitsSeen(x) === FLOOD_JOBS, 'every exit of the storm')));
  reading = false;
  await reader;
  for (const c of clients) c.close();

  // Per job and pipe: every line, numbered 1..n, its text the tool's, in order; then the exit.
  const stored = (await allEvents(url, '', String(startId))).filter((e) => e.scope === 'engine/generation');
  for (const id of ids) {
    const mine = stored.filter((e) => e.payload.proposal_id === id || e.detail?.startsWith(`${id} `));
    const pipe = (name: string) => mine.filter((e) => e.detail?.startsWith(`${id} ${name} line `));
    const out = pipe('stdout');
    expect(
      out.map((e) => Number(e.detail!.split(' ').at(-1))),
      `${id} stdout numbers`,
    ).toEqual(Array.from({ length: FLOOD_LINES }, (_v, k) => k + 1));
    expect(
      out.map((e) => e.summary),
      `${id} stdout text`,
    ).toEqual(Array.from({ length: FLOOD_LINES }, (_v, k) => `flood ${k + 1}`));
    expect(
      pipe('stderr').map((e) => e.summary),
      `${id} stderr text`,
    ).toEqual(Array.from({ length: FLOOD_LINES / 10 }, (_v, k) => `flood-err ${k + 1}`));
    expect(mine.at(-1)?.summary, `${id} ends with its exit`).toBe('dispatch_cli exited rc=0');
  }
  const jobs = (await rawRequest(url, '/api/jobs?limit=100')).json() as { proposalId: string; state: string; stdoutLines: number; stderrLines: number }[];
  for (const id of ids) expect(jobs.find((j) => j.proposalId === id)).toMatchObject({ state: 'exited ok', stdoutLines: FLOOD_LINES, stderrLines: FLOOD_LINES / 10 });

  // Each client: exactly the stored events of the storm, in order, once each.
  for (const [i, c] of clients.entries()) {
    const got = c.events.filter((e) => Number(e.id) > startId && e.scope === 'engine/generation').map((e) => e.id);
    expect(got, `client ${i}`).toEqual(stored.map((e) => e.id));
  }

  // Every read answered, none with a 5xx.
  expect(reads.errors).toEqual([]);
  expect(reads.answered).toBe(reads.sent);
  expect(reads.answered).toBeGreaterThan(0);
  expect([...reads.statuses.keys()].filter((s) => s >= 300)).toEqual([]);
  expect(processesRunning(TOOL)).toEqual([]);
  console.log(`storm: ${FLOOD_JOBS} jobs × ${FLOOD_LINES + FLOOD_LINES / 10} lines, ${stored.length} events stored and streamed to ${FLOOD_CLIENTS} clients, ${reads.answered} reads answered`);
});

function processesRunning(file: string): number[] {
  const out: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue; // dead, awaiting its reaper
      if (fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').includes(file)) out.push(Number(name));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}
