/**
 * P7: the console under a generation storm. 64 running jobs whose tool
 * (bench/tools/stamp-printer) prints timestamped lines, either at a fixed total of 20,000
 * lines/s or as fast as it can; 10 stream clients (bench/load/sse-lag-clients); and a console
 * reading at a steady rate, open-loop (bench/load/open-loop): episodes, beats, takes, lineage,
 * `/api/jobs`, `/api/events?limit=200` and `/api/system-status` of the sample store.
 *
 * Each run starts one service on a copy of the sample store and measures, in the same process:
 * 1. the reads with no job running (the baseline), the stream clients connected and idle;
 * 2. the same reads while the 64 jobs are requested at once and run for JOB_MS.
 * Figures: read latency p50 and p99 against the baseline (target p99 ≤ 3×); delivery lag from
 * the line's write in the child to its arrival at a client, p99 (target ≤ 250 ms at the fixed
 * rate; at full speed, bounded: the lag of the storm's last seconds no larger than of its
 * middle, and the service's RSS bounded); lines stored per second; and no line lost: per job,
 * the lines the tool wrote = the service's count = what each client received, in order =
 * what the database holds, in order.
 *
 * 3. the floor: the same storm with no service (bench/servers/floor-sse: the same tools started
 *    as the service starts jobs, their lines through split2 into the frames the service writes,
 *    to the same 10 clients; the reads answered from memory with the service's own answers of
 *    the storm). What the reads pay there is the machine's, under this storm, not the service's.
 *
 * Whether the service holds the children back when it falls behind (backpressure) shows in
 * the children's own figures: lines written per second against the rate asked, and the time
 * they waited for their pipe to drain; and in the service's RSS growth during the storm.
 */
import fs from 'node:fs';
import path from 'node:path';
import { captureAnswers } from './lib/answer-bytes.js';
import { cpuMsOf, startServer, startService, startStaged, type Running } from './lib/child.js';
import { benchScript, REPO_ROOT, WORK_DIR } from './lib/paths.js';
import { percentile, type Row } from './lib/report.js';
import { storedLines } from './lib/stored.js';

const JOBS = Number(process.env.BENCH_P7_JOBS ?? 64);
const CLIENTS = 10;
/** How long each job prints. */
const JOB_MS = Number(process.env.BENCH_P7_JOB_MS ?? 10_000);
/** The fixed setting: lines/s of all jobs together. */
const TOTAL_RATE = 20_000;
/** The console's reads: requests/s, open-loop. */
const READ_RATE = 100;
const BASELINE_S = 8;
/** The storm's reads start with the requests for the jobs and cover their whole run. */
const STORM_READ_S = JOB_MS / 1000 + 2;
const PROJECT = 'harbor-lights';
const READS = [
  `/api/projects/${PROJECT}/episodes`,
  `/api/projects/${PROJECT}/episodes/1/scenes/main/beats`,
  `/api/beats/b01/takes?projectId=${PROJECT}`,
  `/api/beats/b01/lineage?projectId=${PROJECT}`,
  '/api/jobs?limit=20',
  '/api/events?limit=200',
  '/api/system-status',
];

interface Reads {
  t0Wall: number;
  samples: [number, number, number, number][];
  errors: string[];
}

interface LagResult {
  doneAt: number;
  lines: number[];
  frames: number[];
  hashes: number[];
  exits: number[];
  reconnects: number[];
  perJob: Record<string, number>;
  lag: { p50: number; p99: number; max: number; negative: number };
  split: { toPublishP99: number; fromPublishP99: number };
  lagWindows: [number, number][];
  errors: string[];
}

interface ToolStats {
  job: string;
  lines: number;
  ms: number;
  askedRate: number;
  drainWaits: number;
  drainWaitMs: number;
}

interface Loop {
  p50: number;
  p99: number;
  max: number;
}

/** Time the thread `tid` of `pid` ran, and waited runnable for a CPU (ms), from /proc schedstat. */
function schedOf(pid: number | undefined, tid = pid): { run: number; wait: number } {
  try {
    const [run, wait] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number);
    return { run: (run as number) / 1e6, wait: (wait as number) / 1e6 };
  } catch {
    return { run: NaN, wait: NaN };
  }
}

/** One run of one setting. */
interface StormRun {
  baseP50: number;
  baseP99: number;
  p50: number;
  p99: number;
  /** p99 of the reads scheduled before every job had its 202, and after. */
  spawnP99: number;
  steadyP99: number;
  /** The slowest read kind during the storm, and its p99. */
  worstKind: string;
  worstKindP99: number;
  lagP50: number;
  lagP99: number;
  lagMax: number;
  /** Client 0's lag p99 up to the event's publication, and after it. */
  toPublishP99: number;
  fromPublishP99: number;
  /** Largest lag in the middle third of the storm and in its last third. */
  lagMid: number;
  lagEnd: number;
  storedPerS: number;
  /** Lines the tools wrote per second, all jobs together, over their run. */
  writtenPerS: number;
  /** Share of the jobs' time spent waiting for their pipe to drain. */
  drainShare: number;
  rssBeforeMb: number;
  rssPeakGrowthMb: number;
  serviceCpuShare: number;
  clientCpuShare: number;
  /** The service's main thread during the storm: share of the time it ran, and waited runnable for a CPU. */
  mainRunShare: number;
  mainWaitShare: number;
  loopBase: Loop;
  loopStorm: Loop;
  reconnects: number;
  /**
   * Lines whose arrival reads earlier than their stamp: the two processes' wall clocks differ
   * by more than the line's lag (counted as lag 0). Not a loss: the lines are all there.
   */
  early: number;
  /** The same storm with no service (the floor): read p50/p99 and delivery lag p99. */
  floorP50: number;
  floorP99: number;
  floorLagP99: number;
  problems: string[];
}

/** Nice value of the floor's children: the service's default (CONSOLE_JOB_NICE). */
const FLOOR_NICE = 19;

/**
 * The storm of one run with no service (see the module's comment, 3.), the console's reads
 * answered from `bytesFile`.
 */
async function floorStorm(rate: number, bytesFile: string, problems: string[]): Promise<{ p50: number; p99: number; lagP99: number }> {
  const floor = await startServer(benchScript('servers/floor-sse.js'), '/health', {
    BENCH_TOOL: benchScript('tools/stamp-printer.js'),
    BENCH_BYTES_FILE: bytesFile,
    BENCH_RATE: String(rate / JOBS),
    BENCH_DURATION_MS: String(JOB_MS),
  });
  try {
    const clients = startStaged<LagResult>(benchScript('load/sse-lag-clients.js'), [JSON.stringify({ url: floor.url, clients: CLIENTS, expectExits: JOBS })]);
    await clients.ready;
    const storm = reader(floor.url, STORM_READ_S);
    await storm.ready;
    const r = await fetch(`${floor.url}/start?children=${JOBS}&lines=0&nice=${FLOOR_NICE}`, { method: 'POST' });
    if (r.status !== 202) throw new Error(`the floor's start answered ${r.status}`);
    const [reads, lag] = await Promise.all([storm.result, clients.result]);
    const bad = reads.samples.filter((x) => x[2] < 200 || x[2] >= 300).length;
    if (bad > 0) problems.push(`floor reads: ${bad} errors or non-2xx (${reads.errors.slice(0, 2).join('; ')})`);
    if (lag.errors.length > 0) problems.push(...lag.errors.slice(0, 3).map((e) => `floor: ${e}`));
    const lat = reads.samples.map((x) => x[1]);
    return { p50: percentile(lat, 50), p99: percentile(lat, 99), lagP99: lag.lag.p99 };
  } finally {
    await floor.stop();
  }
}

const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
const mb = (b: number) => b / 2 ** 20;

/** Copy of the sample store (jobs' exits invalidate its cache; nothing writes to it). */
function sampleStore(): string {
  const dir = path.join(WORK_DIR, 'p7-store');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.cpSync(path.join(REPO_ROOT, 'sample-store'), dir, { recursive: true });
  return dir;
}

const reader = (url: string, durationS: number) => startStaged<Reads>(benchScript('load/open-loop.js'), [JSON.stringify({ url, paths: READS, rate: READ_RATE, durationS })]);

/** Opens or closes a window of the loop monitor preloaded in the service; a close returns its figures. */
async function loopWindow(svc: Running, file: string, close: boolean): Promise<Loop | null> {
  svc.proc.kill('SIGUSR2');
  if (!close) return null;
  for (let i = 0; i < 100 && !fs.existsSync(file); i++) await new Promise((r) => setTimeout(r, 20));
  const loop = JSON.parse(fs.readFileSync(file, 'utf8')) as Loop;
  fs.rmSync(file);
  return loop;
}

async function stormRun(store: string, rate: number): Promise<StormRun> {
  const state = fs.mkdtempSync(path.join(WORK_DIR, 'p7-state-'));
  const statsDir = path.join(state, 'tools');
  fs.mkdirSync(statsDir);
  const loopFile = path.join(state, 'loop.json');
  const problems: string[] = [];
  const svc = await startService(
    {
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: state,
      DISPATCH_CLI: benchScript('tools/stamp-printer.js'),
      BENCH_RATE: String(rate / JOBS),
      BENCH_DURATION_MS: String(JOB_MS),
      BENCH_STATS_DIR: statsDir,
      BENCH_LOOP_FILE: loopFile,
      CONSOLE_MAX_RUNNING_JOBS: String(Math.max(64, JOBS)),
      // Every line of the run stays stored, so that the check below can read them all back.
      // Everything else is the service's default (the SSE queue bound among it).
      CONSOLE_EVENT_RETENTION: String(20_000_000),
    },
    ['--import', benchScript('tools/loop-monitor.js')],
  );
  let stopped = false;
  try {
    const clients = startStaged<LagResult>(benchScript('load/sse-lag-clients.js'), [JSON.stringify({ url: svc.url, clients: CLIENTS, expectExits: JOBS })]);
    await clients.ready;
    for (const p of READS) {
      const r = await fetch(svc.url + p);
      if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
    }

    // 1. The baseline: the same reads, no job.
    const base = reader(svc.url, BASELINE_S);
    await base.ready;
    await loopWindow(svc, loopFile, false);
    const baseReads = await base.result;
    const loopBase = (await loopWindow(svc, loopFile, true)) as Loop;

    // 2. The storm.
    const rssBefore = svc.rss() ?? 0;
    let rssPeak = rssBefore;
    const cpu0 = cpuMsOf(svc.proc.pid) ?? 0;
    const sched0 = schedOf(svc.proc.pid);
    const clientCpu0 = cpuMsOf(clients.pid) ?? 0;
    // The clients' process exits as it prints its result: its CPU time is sampled meanwhile.
    let clientCpu = clientCpu0;
    const sampler = setInterval(() => {
      rssPeak = Math.max(rssPeak, svc.rss() ?? 0);
      clientCpu = cpuMsOf(clients.pid) ?? clientCpu;
    }, 100);
    const storm = reader(svc.url, STORM_READ_S);
    await storm.ready;
    await loopWindow(svc, loopFile, false);
    const tStart = Date.now();
    const answers = await Promise.all(
      Array.from({ length: JOBS }, () => fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: PROJECT }) })),
    );
    const tSpawned = Date.now();
    if (answers.some((a) => a.status !== 202)) throw new Error(`generation answered ${answers.map((a) => a.status).join(',')}`);
    const ids = ((await Promise.all(answers.map((a) => a.json()))) as { proposalId: string }[]).map((a) => a.proposalId);
    const [stormReads, lag] = await Promise.all([storm.result, clients.result]);
    const loopStorm = (await loopWindow(svc, loopFile, true)) as Loop;
    clearInterval(sampler);
    const stormMs = lag.doneAt - tStart;
    const cpuMs = (cpuMsOf(svc.proc.pid) ?? 0) - cpu0;
    const sched1 = schedOf(svc.proc.pid);
    const clientCpuMs = clientCpu - clientCpu0;

    // Reads: latency from the scheduled send; errors and non-2xx are problems.
    const lat = (r: Reads, pick: (s: Reads['samples'][number]) => boolean = () => true) => r.samples.filter(pick).map((s) => s[1]);
    for (const [who, r] of [
      ['baseline', baseReads],
      ['storm', stormReads],
    ] as const) {
      const bad = r.samples.filter((s) => s[2] < 200 || s[2] >= 300).length;
      if (bad > 0) problems.push(`${who} reads: ${bad} errors or non-2xx (${r.errors.slice(0, 2).join('; ')})`);
    }
    const spawnEnd = tSpawned - stormReads.t0Wall;
    const kinds = READS.map((p, k) => ({
      p,
      p99: percentile(
        lat(stormReads, (s) => s[3] === k),
        99,
      ),
    })).sort((a, b) => b.p99 - a.p99);
    if (process.env.BENCH_P7_KINDS === '1') {
      for (const [k, p] of READS.entries()) {
        const during = lat(stormReads, (s) => s[3] === k && s[0] <= spawnEnd);
        const after = lat(stormReads, (s) => s[3] === k && s[0] > spawnEnd);
        console.error(`P7 kind ${p}: while spawning n=${during.length} p99 ${percentile(during, 99).toFixed(1)} ms; after n=${after.length} p99 ${percentile(after, 99).toFixed(1)} ms`);
      }
    }

    // Lines: the tools' own counts, the service's, each client's, the database's.
    const tools = fs.readdirSync(statsDir).map((f) => JSON.parse(fs.readFileSync(path.join(statsDir, f), 'utf8')) as ToolStats);
    if (tools.length !== JOBS) problems.push(`${tools.length} of ${JOBS} tools reported`);
    const written = new Map(tools.map((t) => [t.job, t.lines]));
    const totalWritten = tools.reduce((n, t) => n + t.lines, 0);
    const jobs = (await (await fetch(`${svc.url}/api/jobs?limit=${Math.min(500, JOBS * 2)}`)).json()) as { proposalId: string; stdoutLines: number; state: string }[];
    for (const id of ids) {
      const job = jobs.find((j) => j.proposalId === id);
      if (job?.state !== 'exited ok') problems.push(`${id}: ${job?.state ?? 'not listed'}`);
      else if (job.stdoutLines !== written.get(id)) problems.push(`${id}: the tool wrote ${written.get(id)} lines, the service read ${job.stdoutLines}`);
      if (lag.perJob[id] !== written.get(id)) problems.push(`${id}: the tool wrote ${written.get(id)} lines, client 0 received ${lag.perJob[id]}`);
    }
    const differ = lag.frames.filter((f, i) => f !== lag.frames[0] || lag.hashes[i] !== lag.hashes[0]).length;
    if (differ > 0) problems.push(`${differ} clients differ from client 0 (${lag.lines.join(',')} lines)`);
    if (lag.errors.length > 0) problems.push(...lag.errors.slice(0, 3));

    // The service's answers at the storm's end (20 jobs listed, 200 events of lines), for the floor.
    const bytesFile = path.join(state, 'answers.json');
    await captureAnswers(svc.url, READS, bytesFile);
    await svc.stop();
    stopped = true;
    const stored = storedLines(state);
    const short = ids.filter((id) => stored.perJob[id] !== written.get(id)).length;
    if (short > 0 || stored.total !== totalWritten) problems.push(`stored ${stored.total} of ${totalWritten} lines written (${short} jobs differ)`);
    problems.push(...stored.problems);

    // BENCH_P7_NO_FLOOR=1 leaves the floor out (a long storm run for its own figures; the ratios are then NaN).
    const floor = process.env.BENCH_P7_NO_FLOOR === '1' ? { p50: NaN, p99: NaN, lagP99: NaN } : await floorStorm(rate, bytesFile, problems);

    // Lag windows: only the storm's windows hold lines.
    const stormWindows = lag.lagWindows.map(([, l]) => l);
    const third = Math.max(1, Math.floor(stormWindows.length / 3));
    const mid = stormWindows.slice(third, 2 * third);
    const end = stormWindows.slice(2 * third);
    return {
      baseP50: percentile(lat(baseReads), 50),
      baseP99: percentile(lat(baseReads), 99),
      p50: percentile(lat(stormReads), 50),
      p99: percentile(lat(stormReads), 99),
      spawnP99: percentile(
        lat(stormReads, (s) => s[0] <= spawnEnd),
        99,
      ),
      steadyP99: percentile(
        lat(stormReads, (s) => s[0] > spawnEnd),
        99,
      ),
      worstKind: (kinds[0] as { p: string }).p,
      worstKindP99: (kinds[0] as { p99: number }).p99,
      lagP50: lag.lag.p50,
      lagP99: lag.lag.p99,
      lagMax: lag.lag.max,
      toPublishP99: lag.split.toPublishP99,
      fromPublishP99: lag.split.fromPublishP99,
      lagMid: mid.reduce((m, x) => Math.max(m, x), 0),
      lagEnd: end.reduce((m, x) => Math.max(m, x), 0),
      storedPerS: stored.total / (stormMs / 1000),
      writtenPerS: tools.reduce((n, t) => n + t.lines / (t.ms / 1000), 0),
      drainShare:
        tools.reduce((n, t) => n + t.drainWaitMs, 0) /
        Math.max(
          1,
          tools.reduce((n, t) => n + t.ms, 0),
        ),
      rssBeforeMb: mb(rssBefore),
      rssPeakGrowthMb: mb(rssPeak - rssBefore),
      serviceCpuShare: cpuMs / stormMs,
      clientCpuShare: clientCpuMs / stormMs,
      mainRunShare: (sched1.run - sched0.run) / stormMs,
      mainWaitShare: (sched1.wait - sched0.wait) / stormMs,
      loopBase,
      loopStorm,
      reconnects: lag.reconnects.reduce((a, b) => a + b, 0),
      early: lag.lag.negative,
      floorP50: floor.p50,
      floorP99: floor.p99,
      floorLagP99: floor.lagP99,
      problems,
    };
  } finally {
    if (!stopped) await svc.stop();
    fs.rmSync(state, { recursive: true, force: true });
  }
}

export async function runP7(runs: number): Promise<Row[]> {
  const store = sampleStore();
  const rows: Row[] = [];
  const settings = [
    { name: 'fixed', label: `${TOTAL_RATE} lines/s in all`, rate: TOTAL_RATE },
    { name: 'full', label: 'full speed', rate: 0 },
  ].filter((s) => !process.env.BENCH_P7_SETTINGS || process.env.BENCH_P7_SETTINGS.split(',').includes(s.name));
  try {
    for (const setting of settings) {
      const rs: StormRun[] = [];
      for (let run = 0; run < runs; run++) rs.push(await stormRun(store, setting.rate));
      const problems = rs.flatMap((r) => r.problems);
      const id = `P7 ${setting.name}`;
      const where = `${JOBS} jobs at ${setting.label}, ${CLIENTS} stream clients`;
      const m = (f: (r: StormRun) => number) => median(rs.map(f));
      const p99Ratios = rs.map((r) => r.p99 / Math.max(r.baseP99, 1));
      rows.push({
        id,
        measure: `console read p99 (open-loop, ${READ_RATE} req/s), ${where}`,
        unit: 'ms',
        figures: rs.map((r) => r.p99),
        baselines: rs.map((r) => r.baseP99),
        ratios: p99Ratios,
        target: '≤ 3×',
        pass: median(p99Ratios) <= 3 && problems.length === 0,
        note:
          `while the jobs were being spawned ${m((r) => r.spawnP99).toFixed(0)} ms, after ${m((r) => r.steadyP99).toFixed(0)} ms; ` +
          `slowest kind ${rs[0]?.worstKind} (${m((r) => r.worstKindP99).toFixed(0)} ms); event-loop delay p99 ${m((r) => r.loopStorm.p99).toFixed(0)} ms (max ${m((r) => r.loopStorm.max).toFixed(0)}) against ${m((r) => r.loopBase.p99).toFixed(1)} with no job; ` +
          `service CPU ${m((r) => r.serviceCpuShare * 100).toFixed(0)}% of a core (its main thread ran ${m((r) => r.mainRunShare * 100).toFixed(0)}% of the storm and waited runnable for a CPU ${m((r) => r.mainWaitShare * 100).toFixed(0)}%), stream clients' ${m((r) => r.clientCpuShare * 100).toFixed(0)}%`,
      });
      rows.push({
        id,
        measure: `console read p50, ${where}`,
        unit: 'ms',
        figures: rs.map((r) => r.p50),
        baselines: rs.map((r) => r.baseP50),
        ratios: rs.map((r) => r.p50 / Math.max(r.baseP50, 0.1)),
        target: '—',
        pass: true,
        info: true,
      });
      rows.push({
        id,
        measure: `console read p99, ${where}, against the same storm with no service (the floor: the same tools → split2 → frames to the same clients; the reads answered from memory)`,
        unit: 'ms',
        figures: rs.map((r) => r.p99),
        baselines: rs.map((r) => r.floorP99),
        ratios: rs.map((r) => r.p99 / Math.max(r.floorP99, 0.1)),
        target: '— (floor)',
        pass: true,
        info: true,
        note: `the floor's read p50 ${m((r) => r.floorP50).toFixed(1)} ms, its delivery lag p99 ${m((r) => r.floorLagP99).toFixed(0)} ms`,
      });
      const lagNote =
        `p50 ${m((r) => r.lagP50).toFixed(0)} ms, max ${m((r) => r.lagMax).toFixed(0)} ms; p99 from the write to the event's publication ${m((r) => r.toPublishP99).toFixed(0)} ms, from there to the client ${m((r) => r.fromPublishP99).toFixed(0)} ms; largest lag in the storm's middle third ${m((r) => r.lagMid).toFixed(0)} ms, last third ${m((r) => r.lagEnd).toFixed(0)} ms; ` +
        `stream reconnections ${rs.map((r) => r.reconnects).join(', ')}` +
        (rs.some((r) => r.early > 0) ? `; lines arriving before their stamp (the processes' clocks differ; counted as lag 0) ${rs.map((r) => r.early).join(', ')}` : '');
      if (setting.rate > 0) {
        rows.push({
          id,
          measure: `delivery lag p99, line written in the child → arrival at a stream client, ${where}`,
          unit: 'ms',
          figures: rs.map((r) => r.lagP99),
          baselines: null,
          ratios: null,
          target: '≤ 250 ms',
          pass: m((r) => r.lagP99) <= 250 && problems.length === 0,
          note: lagNote,
        });
      } else {
        // Bounded: the lag stops growing (its last third no larger than 1.5× its middle third,
        // allowing for noise) and so does the service's memory.
        const bounded = rs.filter((r) => r.lagEnd <= 1.5 * Math.max(r.lagMid, 50)).length;
        rows.push({
          id,
          measure: `delivery lag p99, line written in the child → arrival at a stream client, ${where}`,
          unit: 'ms',
          figures: rs.map((r) => r.lagP99),
          baselines: null,
          ratios: null,
          target: 'bounded (stops growing)',
          pass: bounded * 2 > rs.length && problems.length === 0,
          note: lagNote,
        });
      }
      rows.push({
        id,
        measure: `lines stored per second, ${where}; every line delivered and stored, in order`,
        unit: 'lines/s',
        figures: rs.map((r) => r.storedPerS),
        baselines: null,
        ratios: null,
        target: 'no loss',
        pass: problems.length === 0,
        note:
          `${problems.length ? `${problems.slice(0, 3).join(' | ')}; ` : ''}` +
          `the tools wrote ${m((r) => r.writtenPerS).toFixed(0)} lines/s${setting.rate > 0 ? ` (asked ${setting.rate})` : ''} and waited for their pipes ${m((r) => r.drainShare * 100).toFixed(1)}% of their time; ` +
          `service RSS ${m((r) => r.rssBeforeMb).toFixed(0)} MB before, peak growth ${m((r) => r.rssPeakGrowthMb).toFixed(0)} MB`,
      });
    }
  } finally {
    fs.rmSync(store, { recursive: true, force: true });
  }
  return rows;
}
