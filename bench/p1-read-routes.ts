/**
 * P1: throughput and p99 latency of the episodes, beats, takes and lineage routes on a
 * generated store of 10,000 shots and 50,000 takes, against a bare Express 5 route
 * returning a 200-byte JSON object. Targets: ≥ 0.8× throughput, p99 ≤ 2×.
 *
 * Beside the target, the limit of this machine for the same answers: node:http
 * serving the very bytes the service answered, from memory (bench/servers/same-bytes), in
 * the same slices; an unjudged row shows how far the service is from it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { captureAnswers } from './lib/answer-bytes.js';
import { cpuMsOf, runJson, startServer, startService, type Running } from './lib/child.js';
import { benchScript, WORK_DIR } from './lib/paths.js';
import type { Row } from './lib/report.js';
import { BEATS_PER_EPISODE, BENCH_PROJECT, beatId, EPISODES, generateStore } from './generate-store.js';

export const BIG_STORE = path.join(WORK_DIR, 'store-10k');
const CONNECTIONS = 32;
const DURATION_S = 2;
/** Back-to-back (bare, route) pairs per route and run. */
const PAIRS = 3;

interface Cannon {
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

const cannon = (url: string, paths: string[]) => runJson<Cannon>(benchScript('load/cannon.js'), [JSON.stringify({ url, paths, connections: CONNECTIONS, durationS: DURATION_S })]);

/** A load slice against `server`, with the server's CPU time per request (µs). */
async function slice(server: Running, paths: string[]): Promise<Cannon & { cpuUs: number }> {
  const c0 = cpuMsOf(server.proc.pid) ?? 0;
  const r = await cannon(server.url, paths);
  const used = (cpuMsOf(server.proc.pid) ?? 0) - c0;
  return { ...r, cpuUs: (used * 1000) / Math.max(1, r.total) };
}

/** Paths per route: several episodes and beats, so the cache serves many keys. */
export function routePaths(): Record<string, string[]> {
  const beats = Array.from({ length: 8 }, (_v, i) => beatId((i % EPISODES) + 1, (i * 7) % BEATS_PER_EPISODE));
  const q = `projectId=${BENCH_PROJECT}`;
  return {
    episodes: [`/api/projects/${BENCH_PROJECT}/episodes`],
    beats: Array.from({ length: 8 }, (_v, i) => `/api/projects/${BENCH_PROJECT}/episodes/${i + 1}/scenes/main/beats`),
    takes: beats.map((b) => `/api/beats/${b}/takes?${q}`),
    lineage: beats.map((b) => `/api/beats/${b}/lineage?${q}`),
  };
}

export function ensureBigStore(): void {
  generateStore(BIG_STORE, { shots: 10_000, takes: 50_000, beatsPerEpisode: BEATS_PER_EPISODE });
}

/**
 * Each run starts the bare server and the service side by side, and measures every route in
 * back-to-back pairs (a bare slice, then a route slice; three pairs): each ratio compares
 * slices seconds apart, so a burst of noise from the host lands on both sides of it alike.
 * A run's ratio is the median of its pair ratios.
 */
export async function runP1(runs: number): Promise<Row[]> {
  ensureBigStore();
  const routes = routePaths();
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
  interface RunFigure {
    rps: number;
    baseRps: number;
    p99: number;
    baseP99: number;
    tput: number;
    p99Ratio: number;
    cpuUs: number;
    baseCpuUs: number;
    bad: number;
    /** node:http serving the same bytes from memory: throughput, the route's share of it, CPU per request. */
    limitRps: number;
    ofLimit: number;
    limitCpuUs: number;
  }
  const byRoute: Record<string, RunFigure[]> = Object.fromEntries(Object.keys(routes).map((k) => [k, []]));
  for (let run = 0; run < runs; run++) {
    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p1-state-'));
    const bare = await startServer(benchScript('servers/bare-express.js'), '/health');
    const svc = await startService({ CONSOLE_DATA_DIR: BIG_STORE, CONSOLE_STATE_DIR: state });
    let limit: Running | undefined;
    try {
      // The service's answers, byte for byte, for the limit server.
      const bytesFile = path.join(state, 'answers.json');
      await captureAnswers(svc.url, Object.values(routes).flat(), bytesFile);
      limit = await startServer(benchScript('servers/same-bytes.js'), '/health', { BENCH_BYTES_FILE: bytesFile });
      // Warm-up (JIT, connections) on both sides.
      await cannon(bare.url, ['/json']);
      for (const paths of Object.values(routes)) await cannon(svc.url, paths);
      for (const paths of Object.values(routes)) await cannon(limit.url, paths);
      for (const [name, paths] of Object.entries(routes)) {
        const pairs: { base: Cannon & { cpuUs: number }; route: Cannon & { cpuUs: number }; limit: Cannon & { cpuUs: number } }[] = [];
        for (let i = 0; i < PAIRS; i++) pairs.push({ base: await slice(bare, ['/json']), route: await slice(svc, paths), limit: await slice(limit, paths) });
        byRoute[name]!.push({
          rps: median(pairs.map((p) => p.route.rps)),
          baseRps: median(pairs.map((p) => p.base.rps)),
          p99: median(pairs.map((p) => p.route.p99)),
          baseP99: median(pairs.map((p) => p.base.p99)),
          tput: median(pairs.map((p) => p.route.rps / p.base.rps)),
          p99Ratio: median(pairs.map((p) => Math.max(p.route.p99, 1) / Math.max(p.base.p99, 1))),
          cpuUs: median(pairs.map((p) => p.route.cpuUs)),
          baseCpuUs: median(pairs.map((p) => p.base.cpuUs)),
          bad: pairs.reduce((n, p) => n + p.route.errors + p.route.non2xx, 0),
          limitRps: median(pairs.map((p) => p.limit.rps)),
          ofLimit: median(pairs.map((p) => p.route.rps / p.limit.rps)),
          limitCpuUs: median(pairs.map((p) => p.limit.cpuUs)),
        });
      }
    } finally {
      await limit?.stop();
      await svc.stop();
      await bare.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const rows: Row[] = [];
  for (const [name, results] of Object.entries(byRoute)) {
    const bad = results.reduce((n, r) => n + r.bad, 0);
    const tput = results.map((r) => r.tput);
    const p99 = results.map((r) => r.p99Ratio);
    rows.push({
      id: `P1 ${name}`,
      measure: `throughput, ${name} route`,
      unit: 'req/s',
      figures: results.map((r) => r.rps),
      baselines: results.map((r) => r.baseRps),
      ratios: tput,
      target: '≥ 0.8×',
      pass: median(tput) >= 0.8 && bad === 0,
      note: `server CPU ${median(results.map((r) => r.cpuUs)).toFixed(0)} µs/request vs bare ${median(results.map((r) => r.baseCpuUs)).toFixed(0)}${bad ? `; ${bad} errors or non-2xx` : ''}`,
    });
    rows.push({
      id: `P1 ${name}`,
      measure: `throughput, ${name} route, against node:http serving the same bytes from memory (the limit)`,
      unit: 'req/s',
      figures: results.map((r) => r.rps),
      baselines: results.map((r) => r.limitRps),
      ratios: results.map((r) => r.ofLimit),
      target: '— (limit)',
      pass: true,
      info: true,
      note: `server CPU ${median(results.map((r) => r.limitCpuUs)).toFixed(0)} µs/request for the same bytes`,
    });
    rows.push({
      id: `P1 ${name}`,
      measure: `p99 latency, ${name} route`,
      unit: 'ms',
      figures: results.map((r) => r.p99),
      baselines: results.map((r) => r.baseP99),
      ratios: p99,
      target: '≤ 2×',
      pass: median(p99) <= 2,
    });
  }
  return rows;
}
