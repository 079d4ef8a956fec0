/**
 * P1: throughput and p99 latency of the episodes, beats, takes and lineage routes on a
 * generated store of 10,000 shots and 50,000 takes, against a bare Express 5 route
 * returning a 200-byte JSON object. Targets: ≥ 0.8× throughput, p99 ≤ 2×.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runJson, startServer, startService } from './lib/child.js';
import { benchScript, WORK_DIR } from './lib/paths.js';
import type { Row } from './lib/report.js';
import { BENCH_PROJECT, beatId, generateStore } from './generate-store.js';

export const BIG_STORE = path.join(WORK_DIR, 'store-10k');
const CONNECTIONS = 32;
const DURATION_S = 5;

interface Cannon {
  rps: number;
  p99: number;
  errors: number;
  non2xx: number;
  total: number;
}

const cannon = (url: string, paths: string[]) =>
  runJson<Cannon>(benchScript('load/cannon.js'), [JSON.stringify({ url, paths, connections: CONNECTIONS, durationS: DURATION_S })]);

/** Paths per route: several episodes and beats, so the cache serves many keys. */
export function routePaths(): Record<string, string[]> {
  const beats = Array.from({ length: 8 }, (_v, i) => beatId((i % 20) + 1, (i * 3) % 25));
  const q = `projectId=${BENCH_PROJECT}`;
  return {
    episodes: [`/api/projects/${BENCH_PROJECT}/episodes`],
    beats: Array.from({ length: 8 }, (_v, i) => `/api/projects/${BENCH_PROJECT}/episodes/${i + 1}/scenes/main/beats`),
    takes: beats.map((b) => `/api/beats/${b}/takes?${q}`),
    lineage: beats.map((b) => `/api/beats/${b}/lineage?${q}`),
  };
}

export function ensureBigStore(): void {
  generateStore(BIG_STORE, { shots: 10_000, takes: 50_000, beatsPerEpisode: 25 });
}

export async function runP1(runs: number): Promise<Row[]> {
  ensureBigStore();
  const routes = routePaths();
  const base: Cannon[] = [];
  const byRoute: Record<string, Cannon[]> = Object.fromEntries(Object.keys(routes).map((k) => [k, []]));
  for (let run = 0; run < runs; run++) {
    const bare = await startServer(benchScript('servers/bare-express.js'), '/health');
    await cannon(bare.url, ['/json']); // warm-up
    base.push(await cannon(bare.url, ['/json']));
    await bare.stop();

    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p1-state-'));
    const svc = await startService({ CONSOLE_DATA_DIR: BIG_STORE, CONSOLE_STATE_DIR: state });
    try {
      for (const paths of Object.values(routes)) {
        for (const p of paths) {
          const r = await fetch(svc.url + p);
          if (r.status !== 200) throw new Error(`${p} answered ${r.status}`);
        }
      }
      for (const [name, paths] of Object.entries(routes)) {
        await cannon(svc.url, paths); // warm-up (JIT, connections)
        byRoute[name]!.push(await cannon(svc.url, paths));
      }
    } finally {
      await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const rows: Row[] = [];
  for (const [name, results] of Object.entries(byRoute)) {
    const bad = results.reduce((n, r) => n + r.errors + r.non2xx, 0);
    const tput = results.map((r, i) => r.rps / (base[i] as Cannon).rps);
    const p99 = results.map((r, i) => Math.max(r.p99, 1) / Math.max((base[i] as Cannon).p99, 1));
    const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)] as number;
    rows.push({
      id: `P1 ${name}`,
      measure: `throughput, ${name} route`,
      unit: 'req/s',
      figures: results.map((r) => r.rps),
      baselines: base.map((r) => r.rps),
      ratios: tput,
      target: '≥ 0.8×',
      pass: median(tput) >= 0.8 && bad === 0,
      ...(bad ? { note: `${bad} errors or non-2xx` } : {}),
    });
    rows.push({
      id: `P1 ${name}`,
      measure: `p99 latency, ${name} route`,
      unit: 'ms',
      figures: results.map((r) => r.p99),
      baselines: base.map((r) => r.p99),
      ratios: p99,
      target: '≤ 2×',
      pass: median(p99) <= 2,
    });
  }
  return rows;
}
