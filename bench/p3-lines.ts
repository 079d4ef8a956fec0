/**
 * P3: lines/s from 8 children printing 200,000 lines each, through the
 * supervisor, the bus and the state database, to 10 SSE clients, against the floor pipeline
 * measured in the same run: the same children → split2 → the same Server-Sent Events frames
 * written to the same 10 clients, with no bus, no database and no service
 * (bench/servers/floor-sse.ts). Target ≥ 0.8× of the floor; every client receives every line,
 * in order, once; every line is stored (read back from the stopped service's database).
 *
 * Two unjudged rows give the service's CPU per line over the same storm, its process's and its main thread's, with
 * each thread's share in the note (bench/lib/threads.ts): what a line costs, beside the lines per second, so that an
 * A/B run (BENCH_AB_BASE) shows where a build's time goes in the run itself.
 *
 * The old baseline (one process reading the children through split2 into JSON.stringify, no
 * client at all) is kept as an extra, unjudged row: no service with clients can reach it on a
 * 2-core machine, since the clients' own CPU comes out of the same two cores.
 */
import fs from 'node:fs';
import path from 'node:path';
import { cpuMsOf, runJson, startServer, startService, startStaged } from './lib/child.js';
import { benchScript, WORK_DIR, emptyStoreDir } from './lib/paths.js';
import type { Row } from './lib/report.js';
import { storedLines } from './lib/stored.js';
import { cpuPerUnit, cpuSplitText, threadCpu } from './lib/threads.js';

const CHILDREN = Number(process.env.BENCH_P3_CHILDREN ?? 8);
const LINES = Number(process.env.BENCH_P3_LINES ?? 200_000);
const CLIENTS = 10;

interface ClientsResult {
  doneAt: number;
  lines: number[];
  frames: number[];
  hashes: number[];
  exits: number[];
  errors: string[];
}

/** Per job: the spawn event, every line, the exit event. */
const FRAMES = CHILDREN * (LINES + 2);

/** Checks a clients' result: client 0 saw every line in order, the others the same frames. */
function problemsOf(r: ClientsResult, who: string): string[] {
  const out: string[] = [];
  if (r.lines[0] !== CHILDREN * LINES) out.push(`${who}: client 0 saw ${r.lines[0]} lines`);
  const differ = r.frames.filter((f, i) => f !== FRAMES || r.hashes[i] !== r.hashes[0]).length;
  if (differ > 0) out.push(`${who}: ${differ} clients differ from client 0 (${r.frames.join(',')})`);
  if (r.errors.length > 0) out.push(`${who}: ${r.errors.slice(0, 3).join('; ')}`);
  return out;
}

const clientsOf = (url: string) => startStaged<ClientsResult>(benchScript('load/sse-clients.js'), [JSON.stringify({ url, clients: CLIENTS, expectExits: CHILDREN, expectFrames: FRAMES })]);

export async function runP3(runs: number): Promise<Row[]> {
  const tool = benchScript('tools/line-printer.js');
  const figures: number[] = [];
  const floors: number[] = [];
  const noClient: number[] = [];
  // The service's CPU per line over the storm, the process and its main thread (the rest: its other threads).
  const cpuUs: number[] = [];
  const mainUs: number[] = [];
  const splits: string[] = [];
  const problems: string[] = [];
  for (let run = 0; run < runs; run++) {
    const base = await runJson<{ lines: number; ms: number }>(benchScript('baselines/split2-json.js'), [tool, String(CHILDREN), String(LINES)]);
    noClient.push(base.lines / (base.ms / 1000));

    // The floor: the bare pipeline, to the same clients.
    const floor = await startServer(benchScript('servers/floor-sse.js'), '/health', { BENCH_TOOL: tool });
    try {
      const clients = clientsOf(floor.url);
      await clients.ready;
      const t0 = Date.now();
      const a = await fetch(`${floor.url}/start?children=${CHILDREN}&lines=${LINES}`, { method: 'POST' });
      if (a.status !== 202) throw new Error(`floor answered ${a.status}`);
      const r = await clients.result;
      floors.push((CHILDREN * LINES) / ((r.doneAt - t0) / 1000));
      problems.push(...problemsOf(r, 'floor'));
    } finally {
      await floor.stop();
    }

    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p3-state-'));
    const svc = await startService({
      CONSOLE_DATA_DIR: emptyStoreDir(),
      CONSOLE_STATE_DIR: state,
      DISPATCH_CLI: tool,
      BENCH_LINES: String(LINES),
      CONSOLE_SSE_MAX_QUEUE_BYTES: String(512 * 1024 * 1024),
      // The row measures throughput with every client receiving every line: the bound on all clients' queued
      // bytes (default 64 MiB) is lifted to the clients' own bounds, as the clients share the two cores.
      CONSOLE_SSE_TOTAL_QUEUE_BYTES: String(CLIENTS * 512 * 1024 * 1024),
      // Every line of the run stays stored, so that the check below can read them all back.
      CONSOLE_EVENT_RETENTION: String(4 * CHILDREN * LINES),
    });
    let stopped = false;
    try {
      const clients = clientsOf(svc.url);
      await clients.ready;
      const cpu0 = cpuMsOf(svc.proc.pid) ?? Number.NaN;
      const threads0 = await threadCpu(svc.proc.pid as number, svc.url);
      const t0 = Date.now();
      const answers = await Promise.all(
        Array.from({ length: CHILDREN }, () =>
          fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'p3' }) }),
        ),
      );
      if (answers.some((a) => a.status !== 202)) throw new Error(`generation answered ${answers.map((a) => a.status).join(',')}`);
      const r = await clients.result;
      figures.push((CHILDREN * LINES) / ((r.doneAt - t0) / 1000));
      cpuUs.push((((cpuMsOf(svc.proc.pid) ?? Number.NaN) - cpu0) * 1000) / (CHILDREN * LINES));
      const split = cpuPerUnit(threads0, await threadCpu(svc.proc.pid as number, svc.url), CHILDREN * LINES);
      mainUs.push(split.find(([name]) => name === 'main')?.[1] ?? Number.NaN);
      splits.push(cpuSplitText(split));
      problems.push(...problemsOf(r, 'service'));
      await svc.stop();
      stopped = true;
      const stored = storedLines(state);
      const short = Object.values(stored.perJob).filter((n) => n !== LINES).length;
      if (stored.total !== CHILDREN * LINES || short > 0) problems.push(`stored ${stored.total} of ${CHILDREN * LINES} lines (${short} jobs short)`);
      problems.push(...stored.problems);
    } finally {
      if (!stopped) await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const ratios = figures.map((f, i) => f / (floors[i] as number));
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
  return [
    {
      id: 'P3',
      measure: `lines/s, ${CHILDREN} children × ${LINES} lines → bus → DB → ${CLIENTS} SSE clients, against the floor (children → split2 → frames → the same clients)`,
      unit: 'lines/s',
      figures,
      baselines: floors,
      ratios,
      target: '≥ 0.8×, no loss, every line stored',
      pass: median(ratios) >= 0.8 && problems.length === 0,
      ...(problems.length ? { note: problems.slice(0, 4).join(' | ') } : {}),
    },
    {
      id: 'P3 no-client',
      measure: `the same lines/s against the old baseline: ${CHILDREN} children → split2 → JSON.stringify, no client`,
      unit: 'lines/s',
      figures,
      baselines: noClient,
      ratios: figures.map((f, i) => f / (noClient[i] as number)),
      target: '— (was ≥ 0.5×)',
      pass: true,
      info: true,
      note: `the floor itself reaches ${median(floors.map((f, i) => f / (noClient[i] as number))).toFixed(2)}× of it`,
    },
    {
      id: 'P3 CPU',
      measure: `the service's CPU per line over the same storm (user + system, every thread of its process; its children and the spawn helper process not counted)`,
      unit: 'µs/line',
      figures: cpuUs,
      baselines: null,
      ratios: null,
      target: '—',
      pass: true,
      info: true,
      note: `by thread, µs per line, each run: ${splits.join(' | ')}`,
    },
    {
      id: 'P3 main',
      measure: `the service's main thread's CPU per line over the same storm`,
      unit: 'µs/line',
      figures: mainUs,
      baselines: null,
      ratios: null,
      target: '—',
      pass: true,
      info: true,
    },
  ];
}
