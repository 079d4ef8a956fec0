/**
 * P6: RSS after 1,000,000 events through the bus and a 2-minute soak: ≤ 256 MB and flat (no
 * growth in the last minute). The three runs go side by side (three service instances), so
 * the row fits in the benchmark's time budget. Events come from generation jobs (4 × 250,000
 * lines) with 2 SSE clients reading; during the soak a small job runs every 5 s and the read
 * routes are polled, and RSS is sampled every 2 s.
 *
 * Beside them, for an A/B run (`BENCH_AB_BASE`): the RSS of each instance idle before the storm
 * (`P6 start`, its threads and start-up alone) and what the storm and the soak added to it
 * (`P6 added`): a build whose RSS is higher only by its idle cost shows it in the same run.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startService, startStaged, type Running } from './lib/child.js';
import { benchScript, WORK_DIR, emptyStoreDir } from './lib/paths.js';
import type { Row } from './lib/report.js';

const EVENTS = Number(process.env.BENCH_P6_EVENTS ?? 1_000_000);
const JOBS = 4;
const SOAK_MS = Number(process.env.BENCH_P6_SOAK_MS ?? 120_000);
const LIMIT_MB = 256;
/** Wait after the first answer before the idle RSS is read: the threads started with the service have settled. */
const START_SETTLE_MS = 3000;
/** Growth over the last minute that still counts as flat. */
const FLAT_MB = 8;

/** Least-squares slope of RSS samples, in MB per minute. */
function slopePerMinute(samples: readonly { t: number; rss: number }[]): number {
  const n = samples.length;
  if (n < 2) return 0;
  const mt = samples.reduce((a, s) => a + s.t, 0) / n;
  const mr = samples.reduce((a, s) => a + s.rss, 0) / n;
  let num = 0;
  let den = 0;
  for (const s of samples) {
    num += (s.t - mt) * (s.rss - mr);
    den += (s.t - mt) ** 2;
  }
  return den === 0 ? 0 : (num / den) * 60_000;
}

interface Soak {
  /** RSS idle, before the storm (START_SETTLE_MS after the first answer). */
  startMb: number;
  finalMb: number;
  growthMb: number;
  peakGrowthMb: number;
  slopeMb: number;
  problems: string[];
}

async function generate(svc: Running): Promise<void> {
  const a = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":"p6"}' });
  if (a.status !== 202) throw new Error(`generation answered ${a.status}`);
}

async function oneRun(index: number): Promise<Soak> {
  const state = fs.mkdtempSync(path.join(WORK_DIR, `p6-state-${index}-`));
  const svc = await startService({
    CONSOLE_DATA_DIR: emptyStoreDir(),
    CONSOLE_STATE_DIR: state,
    DISPATCH_CLI: benchScript('tools/line-printer.js'),
    BENCH_LINES: String(EVENTS / JOBS),
    // The load clients share two cores with everything else: let them lag rather than be dropped.
    CONSOLE_SSE_MAX_QUEUE_BYTES: String(512 * 1024 * 1024),
    // And the bound on both clients' queued bytes together (default 64 MiB) with it.
    CONSOLE_SSE_TOTAL_QUEUE_BYTES: String(2 * 512 * 1024 * 1024),
  });
  const problems: string[] = [];
  try {
    await new Promise((res) => setTimeout(res, START_SETTLE_MS));
    const startMb = (svc.rss() ?? NaN) / 2 ** 20;
    const clients = startStaged<{ errors: string[]; lines: number[]; frames: number[]; hashes: number[] }>(benchScript('load/sse-clients.js'), [
      JSON.stringify({ url: svc.url, clients: 2, expectExits: JOBS, expectFrames: EVENTS + 2 * JOBS }),
    ]);
    await clients.ready;
    for (let j = 0; j < JOBS; j++) await generate(svc);
    const r = await clients.result;
    if (r.errors.length) problems.push(r.errors[0] as string);
    if (r.lines[0] !== EVENTS) problems.push(`client 0 saw ${r.lines[0]} lines`);
    if (r.frames[1] !== r.frames[0] || r.hashes[1] !== r.hashes[0]) problems.push('client 1 differs from client 0');

    // Soak: RSS every 2 s; light traffic.
    const samples: { t: number; rss: number }[] = [];
    const t0 = Date.now();
    let tick = 0;
    while (Date.now() - t0 < SOAK_MS) {
      if (++tick % 3 === 0) {
        const a = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":"p6","dryRun":true}' });
        await a.arrayBuffer();
      }
      await (await fetch(`${svc.url}/api/events?limit=200`)).arrayBuffer();
      await (await fetch(`${svc.url}/api/system-status`)).arrayBuffer();
      samples.push({ t: Date.now() - t0, rss: (svc.rss() ?? 0) / 2 ** 20 });
      await new Promise((res) => setTimeout(res, 2000));
    }
    // Between full collections RSS climbs with garbage (a saw-tooth: each small job leaves a
    // few MB until the next mark-compact) and falls back; what a leak raises is the level it
    // falls back to. So: the floor (lowest sample) of the last minute minus the floor of the
    // minute before. The growth of the peaks and the least-squares slope are reported too:
    // they move with where the collections fall in each minute.
    const last = samples.filter((s) => s.t >= SOAK_MS - 60_000);
    const before = samples.filter((s) => s.t >= SOAK_MS - 120_000 && s.t < SOAK_MS - 60_000);
    const prior = before.length ? before : last;
    const growthMb = Math.min(...last.map((s) => s.rss)) - Math.min(...prior.map((s) => s.rss));
    const peakGrowthMb = Math.max(...last.map((s) => s.rss)) - Math.max(...prior.map((s) => s.rss));
    const slopeMb = slopePerMinute(last);
    // For the notes: where the memory is (the service's own metrics: heap spaces, external memory).
    if (process.env.BENCH_P6_MEMORY) {
      const text = await (await fetch(`${svc.url}/api/metrics`)).text();
      const mb = (line: string) => line.replace(/ ([0-9.e+]+)$/, (_m, v: string) => ` ${(Number(v) / 2 ** 20).toFixed(1)} MB`);
      const rollup = fs
        .readFileSync(`/proc/${svc.proc.pid}/smaps_rollup`, 'utf8')
        .split('\n')
        .filter((l) => /^(Rss|Anonymous|Private_Clean|Private_Dirty|Shared_Clean):/.test(l));
      const threads = fs.readdirSync(`/proc/${svc.proc.pid}/task`).length;
      process.stderr.write(
        `P6 run ${index} memory (${threads} threads): ${rollup.map((l) => l.replace(/\s+/g, ' ')).join('; ')}\n${text
          .split('\n')
          .filter((l) => /^(process_resident|nodejs_heap_size|nodejs_external|nodejs_heap_space_size_used)/.test(l))
          .map(mb)
          .join('\n')}\n`,
      );
    }
    // For the notes: a heap snapshot of the service at this point, in the folder named. The
    // service must run with `--heapsnapshot-signal=SIGUSR2 --diagnostic-dir=<that folder>`
    // (BENCH_SERVICE_ENV's NODE_OPTIONS); the snapshot is complete when its size stops moving.
    const snapshotDir = process.env.BENCH_P6_HEAPSNAPSHOT;
    if (snapshotDir) {
      const had = new Set(fs.readdirSync(snapshotDir));
      process.kill(svc.proc.pid as number, 'SIGUSR2');
      let size = -1;
      for (;;) {
        await new Promise((res) => setTimeout(res, 1000));
        const file = fs.readdirSync(snapshotDir).find((f) => !had.has(f) && f.endsWith('.heapsnapshot'));
        const now = file === undefined ? -1 : fs.statSync(path.join(snapshotDir, file)).size;
        if (now > 0 && now === size) break;
        size = now;
      }
    }
    if (process.env.BENCH_P6_SAMPLES) fs.writeFileSync(`${process.env.BENCH_P6_SAMPLES}.${index}.json`, JSON.stringify(samples));
    return { startMb, finalMb: samples.at(-1)?.rss ?? NaN, growthMb, peakGrowthMb, slopeMb, problems };
  } finally {
    await svc.stop();
    fs.rmSync(state, { recursive: true, force: true });
  }
}

export async function runP6(runs: number): Promise<Row[]> {
  const results = await Promise.all(Array.from({ length: runs }, (_v, i) => oneRun(i)));
  const finals = results.map((r) => r.finalMb);
  const starts = results.map((r) => r.startMb);
  const growth = results.map((r) => r.growthMb);
  const problems = results.flatMap((r) => r.problems);
  return [
    {
      id: 'P6',
      measure: `RSS after ${EVENTS.toLocaleString('en')} events and a ${Math.round(SOAK_MS / 1000)} s soak`,
      unit: 'MB',
      figures: finals,
      baselines: null,
      ratios: null,
      target: `≤ ${LIMIT_MB} MB`,
      pass: Math.max(...finals) <= LIMIT_MB && problems.length === 0,
      ...(problems.length ? { note: problems[0] as string } : {}),
    },
    {
      id: 'P6 start',
      measure: `RSS idle before the storm, ${START_SETTLE_MS / 1000} s after the service's first answer (its threads and start-up alone)`,
      unit: 'MB',
      figures: starts,
      baselines: null,
      ratios: null,
      target: '—',
      pass: true,
      info: true,
    },
    {
      id: 'P6 added',
      measure: `what the ${EVENTS.toLocaleString('en')} events and the soak added to the RSS: P6 less P6 start, each instance`,
      unit: 'MB',
      figures: results.map((r) => r.finalMb - r.startMb),
      baselines: null,
      ratios: null,
      target: '—',
      pass: true,
      info: true,
    },
    {
      id: 'P6 flat',
      measure: 'growth of the RSS floor (lowest sample): last minute of the soak against the minute before',
      unit: 'MB',
      figures: growth,
      baselines: null,
      ratios: null,
      target: `≤ ${FLAT_MB} MB (flat)`,
      pass: Math.max(...growth) <= FLAT_MB,
      note: `growth of the peaks: ${results.map((r) => r.peakGrowthMb.toFixed(1)).join(', ')} MB; least-squares slope over the last minute: ${results.map((r) => r.slopeMb.toFixed(1)).join(', ')} MB/min`,
    },
  ];
}
