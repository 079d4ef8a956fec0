/**
 * P2: time from request to 202 with 64 concurrent generation requests (a tiny dispatch tool
 * printing 3 lines), against a bare loop of child_process.spawn at the same concurrency.
 * Target: p99 ≤ 1.5×; every spawn, line and exit event present.
 *
 * P2 loop: the service's own event-loop delay p99 (bench/tools/loop-monitor) from the first of 64
 * generation requests sent at once to the last 202, against its floor: the same burst to a bare
 * server whose helper process forks the same jobs (bench/servers/floor-spawn); the same window
 * idle is in the note. Target ≤ 5 ms: a spawn must not hold the main thread (issue of the
 * worker-threaded supervisor; bench/tools/spawn-placement measures where a fork's cost falls).
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { runJson, startServer, startService } from './lib/child.js';
import { benchScript, WORK_DIR, emptyStoreDir } from './lib/paths.js';
import { percentile, type Row } from './lib/report.js';

const CONCURRENCY = 64;
const ROUNDS = 5;
const LINES = 3;

/** One POST over its own connection; resolves with {status, ms, proposalId}. */
function post(url: string, body: string): Promise<{ status: number; ms: number; proposalId: string }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.request(
      { host: u.hostname, port: u.port, path: '/api/proposals/generate', method: 'POST', agent: false, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t0, proposalId: (JSON.parse(text) as { proposalId?: string }).proposalId ?? '' }));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Ev {
  id: string;
  severity: string;
  summary: string;
  detail: string | null;
  payload: Record<string, unknown>;
}

async function events(url: string): Promise<Ev[]> {
  const out: Ev[] = [];
  let since = '0';
  for (;;) {
    const page = (await (await fetch(`${url}/api/events?limit=500&sinceId=${since}&scopePrefix=engine/generation`)).json()) as Ev[];
    out.push(...page);
    if (page.length < 500) return out;
    since = (page.at(-1) as Ev).id;
  }
}

/** The loop monitor's figures of the window that just closed (its file, removed once read), ms. */
async function readLoopFile(file: string): Promise<{ p99: number; max: number; count: number }> {
  for (let i = 0; i < 200 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 25));
  const loop = JSON.parse(fs.readFileSync(file, 'utf8')) as { p99: number; max: number; count: number };
  fs.rmSync(file);
  return loop;
}

/**
 * The loop monitor's p99 over a burst of CONCURRENCY generation requests sent at once, to the last 202 or to
 * `minWindowMs` after the first if that is later, and over as long a window idle, ms; the busy window's length.
 */
async function burstLoop(
  url: string,
  proc: { kill: (s: NodeJS.Signals) => boolean },
  loopFile: string,
  problems: string[],
  minWindowMs = 0,
): Promise<{ busy: number; idle: number; windowMs: number }> {
  // Warm: one job first, so the window holds the spawns and not the first use of the route.
  if ((await post(url, '{"project":"p2"}')).status !== 202) problems.push('warm-up refused');
  await allExited(url);
  const t0 = performance.now();
  proc.kill('SIGUSR2'); // window opens
  const answers = await Promise.all(Array.from({ length: CONCURRENCY }, () => post(url, '{"project":"p2"}')));
  // The floor answers sooner: its window is held as long as the service's, the same time for its jobs to start.
  const rest = t0 + minWindowMs - performance.now();
  if (rest > 0) await new Promise((r) => setTimeout(r, rest));
  proc.kill('SIGUSR2'); // window closes
  const windowMs = performance.now() - t0;
  const busy = await readLoopFile(loopFile);
  for (const a of answers) if (a.status !== 202) problems.push(`status ${a.status}`);
  await allExited(url);
  // The same length of window with nothing to do: the monitor's own floor on this machine.
  proc.kill('SIGUSR2');
  await new Promise((r) => setTimeout(r, windowMs));
  proc.kill('SIGUSR2');
  const idle = await readLoopFile(loopFile);
  return { busy: busy.p99, idle: idle.p99, windowMs };
}

/**
 * The P2 loop row: the main thread's event-loop delay while 64 jobs are spawned at once, against its floor
 * in the same run: the same burst to a bare server whose helper process forks the same jobs
 * (bench/servers/floor-spawn), a main thread that forks nothing and does nothing else, watched over a
 * window as long as the service's (it answers sooner; a shorter window would weigh its burst more).
 */
async function runP2Loop(runs: number): Promise<Row> {
  const tool = benchScript('tools/line-printer.js');
  const monitor = ['--import', benchScript('tools/loop-monitor.js')];
  const figures: number[] = [];
  const floors: number[] = [];
  const idles: number[] = [];
  const problems: string[] = [];
  for (let run = 0; run < runs; run++) {
    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p2-loop-state-'));
    const loopFile = path.join(state, 'loop.json');
    try {
      const svc = await startService(
        { CONSOLE_DATA_DIR: emptyStoreDir(), CONSOLE_STATE_DIR: state, DISPATCH_CLI: tool, BENCH_LINES: String(LINES), CONSOLE_MAX_RUNNING_JOBS: String(CONCURRENCY), BENCH_LOOP_FILE: loopFile },
        monitor,
      );
      let windowMs: number;
      try {
        const burst = await burstLoop(svc.url, svc.proc, loopFile, problems);
        figures.push(burst.busy);
        idles.push(burst.idle);
        windowMs = burst.windowMs;
      } finally {
        await svc.stop();
      }
      const floor = await startServer(benchScript('servers/floor-spawn.js'), '/health', { BENCH_TOOL: tool, BENCH_LINES: String(LINES), BENCH_JOB_NICE: '19', BENCH_LOOP_FILE: loopFile }, monitor);
      try {
        floors.push((await burstLoop(floor.url, floor.proc, loopFile, problems, windowMs)).busy);
      } finally {
        await floor.stop();
      }
    } finally {
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const ratios = figures.map((f, i) => f / (floors[i] as number));
  const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
  const idleNote = `the same window idle: p99 ${median(idles).toFixed(2)} ms (median)`;
  return {
    id: 'P2 loop',
    measure: `main-thread event-loop delay p99 from the first of ${CONCURRENCY} generation requests sent at once to the last 202 (baseline, the floor: the same burst to a bare server whose helper process forks the same jobs, over a window as long)`,
    unit: 'ms',
    figures,
    baselines: floors,
    ratios,
    target: '≤ 5 ms',
    pass: median(figures) <= 5 && problems.length === 0,
    note: [idleNote, ...problems.slice(0, 3)].join(' | '),
  };
}

/** Resolves once the service runs no job. */
async function allExited(url: string): Promise<void> {
  for (;;) {
    const status = (await (await fetch(`${url}/api/system-status`)).json()) as { jobs: { running: number } };
    if (status.jobs.running === 0) return;
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function runP2(runs: number): Promise<Row[]> {
  const tool = benchScript('tools/line-printer.js');
  const figures: number[] = [];
  const baselines: number[] = [];
  const problems: string[] = [];
  for (let run = 0; run < runs; run++) {
    const base = await runJson<{ latencies: number[] }>(benchScript('baselines/spawn-loop.js'), [tool, String(CONCURRENCY), String(ROUNDS)], { BENCH_LINES: String(LINES) });
    baselines.push(percentile(base.latencies, 99));

    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p2-state-'));
    const svc = await startService({
      CONSOLE_DATA_DIR: emptyStoreDir(),
      CONSOLE_STATE_DIR: state,
      DISPATCH_CLI: tool,
      BENCH_LINES: String(LINES),
      CONSOLE_MAX_RUNNING_JOBS: String(CONCURRENCY),
    });
    try {
      const latencies: number[] = [];
      const ids: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const answers = await Promise.all(Array.from({ length: CONCURRENCY }, () => post(svc.url, '{"project":"p2"}')));
        for (const a of answers) {
          if (a.status !== 202) problems.push(`status ${a.status}`);
          latencies.push(a.ms);
          ids.push(a.proposalId);
        }
        // Wait until this round's jobs have exited, so each round starts below the cap.
        await allExited(svc.url);
      }
      figures.push(percentile(latencies, 99));
      // Every spawn, line and exit event present for every job.
      const evs = await events(svc.url);
      for (const id of ids) {
        const spawn = evs.filter((e) => e.payload.proposal_id === id && e.summary.startsWith('dispatch_cli spawned')).length;
        const exit = evs.filter((e) => e.payload.proposal_id === id && e.summary === 'dispatch_cli exited rc=0').length;
        const lines = evs.filter((e) => e.detail?.startsWith(`${id} stdout line `)).length;
        if (spawn !== 1 || exit !== 1 || lines !== LINES) {
          problems.push(`${id}: spawn ${spawn}, lines ${lines}, exit ${exit}`);
          break;
        }
      }
    } finally {
      await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const ratios = figures.map((f, i) => f / (baselines[i] as number));
  const median = [...ratios].sort((a, b) => a - b)[Math.floor((ratios.length - 1) / 2)] as number;
  const loop = await runP2Loop(runs);
  return [
    {
      id: 'P2',
      measure: `p99 time to 202, ${CONCURRENCY} concurrent generation requests (× ${ROUNDS} rounds)`,
      unit: 'ms',
      figures,
      baselines,
      ratios,
      target: '≤ 1.5×, every event',
      pass: median <= 1.5 && problems.length === 0,
      ...(problems.length ? { note: problems.slice(0, 3).join(' | ') } : {}),
    },
    loop,
  ];
}
