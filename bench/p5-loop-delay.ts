/**
 * P5: event-loop delay p99 (perf_hooks.monitorEventLoopDelay) while lineage and episodes of
 * the 10,000-shot store are synthesised under read load. Target ≤ 10 ms. Synthesis is forced
 * throughout: lineage is asked rooted at thousands of distinct takes (each a new cache key),
 * and a shot file is rewritten every 500 ms, so the project's cached answers go stale and
 * the workers re-read and re-synthesise the whole project.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runJson, startService } from './lib/child.js';
import { benchScript, WORK_DIR } from './lib/paths.js';
import type { Row } from './lib/report.js';
import { BEATS_PER_EPISODE, BENCH_PROJECT, beatId } from './generate-store.js';
import { BIG_STORE, ensureBigStore } from './p1-read-routes.js';

const DURATION_S = 8;

/** Lineage rooted at distinct takes (5 per shot), plus episodes. */
function paths(): string[] {
  const out: string[] = [];
  for (let i = 0; i < 2000; i++) {
    const shot = (i * 37) % 10_000; // spread over the store
    const episode = Math.floor(shot / 500) + 1;
    const beat = beatId(episode, Math.floor((shot % 500) / (500 / BEATS_PER_EPISODE)));
    const take = `tk_${String(shot * 5 + 1 + (i % 5)).padStart(6, '0')}`;
    out.push(`/api/beats/${beat}/lineage?projectId=${BENCH_PROJECT}&takeId=${take}`);
    if (i % 10 === 0) out.push(`/api/projects/${BENCH_PROJECT}/episodes`);
  }
  return out;
}

export async function runP5(runs: number): Promise<Row[]> {
  ensureBigStore();
  const figures: number[] = [];
  const reads: number[] = [];
  const problems: string[] = [];
  // The store is modified during the run: work on a copy.
  const store = path.join(WORK_DIR, 'p5-store');
  fs.rmSync(store, { recursive: true, force: true });
  fs.cpSync(BIG_STORE, store, { recursive: true });
  const shotFile = path.join(store, 'projects', BENCH_PROJECT, 'shots', 's00001.json');
  const shot = fs.readFileSync(shotFile, 'utf8');
  for (let run = 0; run < runs; run++) {
    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p5-state-'));
    const loopFile = path.join(state, 'loop.json');
    const svc = await startService({ CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: state, BENCH_LOOP_FILE: loopFile }, ['--import', benchScript('tools/loop-monitor.js')]);
    let touch: NodeJS.Timeout | undefined;
    try {
      await fetch(`${svc.url}/api/projects/${BENCH_PROJECT}/episodes`); // first load
      svc.proc.kill('SIGUSR2'); // window opens
      let n = 0;
      touch = setInterval(() => fs.writeFileSync(shotFile, shot.replace('"duration_s":3.5', `"duration_s":${3.5 + (++n % 2) / 10}`)), 500);
      const optsFile = path.join(state, 'cannon.json');
      fs.writeFileSync(optsFile, JSON.stringify({ url: svc.url, paths: paths(), connections: 16, durationS: DURATION_S }));
      const r = await runJson<{ errors: number; non2xx: number; total: number }>(benchScript('load/cannon.js'), [`@${optsFile}`]);
      clearInterval(touch);
      svc.proc.kill('SIGUSR2'); // window closes
      for (let i = 0; i < 100 && !fs.existsSync(loopFile); i++) await new Promise((res) => setTimeout(res, 50));
      const loop = JSON.parse(fs.readFileSync(loopFile, 'utf8')) as { p99: number };
      figures.push(loop.p99);
      reads.push(r.total);
      if (r.errors + r.non2xx > 0) problems.push(`${r.errors} errors, ${r.non2xx} non-2xx of ${r.total}`);
    } finally {
      clearInterval(touch);
      await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  fs.rmSync(store, { recursive: true, force: true });
  const median = [...figures].sort((a, b) => a - b)[Math.floor((figures.length - 1) / 2)] as number;
  return [
    {
      id: 'P5',
      measure: 'event-loop delay p99 while the 10k-shot store is synthesised under read load',
      unit: 'ms',
      figures,
      baselines: null,
      ratios: null,
      target: '≤ 10 ms',
      pass: median <= 10 && problems.length === 0,
      // The reads answered in the window: the main thread's load, which the delay depends on.
      note: `${problems.length ? `${problems[0] as string}; ` : ''}reads answered in the ${DURATION_S} s window: ${reads.join(' / ')}`,
    },
  ];
}
