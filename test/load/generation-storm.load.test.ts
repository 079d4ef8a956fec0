/**
 * The bounded load test (issue 5, "Load test in CI"): the service as its own process, 32
 * concurrent generation jobs streaming output, 20 SSE clients, and read traffic at once.
 * Asserts no lost or duplicated event on any client, no 5xx, every job reaching a final
 * state, and no child process left. It asserts no timing.
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
  await Promise.all(clients.map((c) => c.until((x) => exitsSeen(x) === JOBS, 'every exit event', 100_000)));
  reading = false;
  await Promise.all(readers);
  for (const c of clients) c.close();

  // The stored record: every event of this storm, in id order.
  const stored = (await allEvents(url, '', String(startId))).filter((e) => e.scope === 'engine/generation');
  for (const [i, c] of clients.entries()) {
    const got = c.events.filter((e) => Number(e.id) > startId && e.scope === 'engine/generation');
    // No duplicate and nothing out of order: ids strictly increase on every client.
    const numeric = got.map((e) => Number(e.id));
    expect(numeric.every((n, k) => k === 0 || n > (numeric[k - 1] as number)), `client ${i} order`).toBe(true);
    // Nothing lost: exactly the stored events.
    expect(got.map((e) => e.id), `client ${i} completeness`).toEqual(stored.map((e) => e.id));
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
  const jobs = (await (await fetch(`${url}/api/jobs?limit=100`)).json()) as { proposalId: string; state: string; argv: string[] }[];
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
