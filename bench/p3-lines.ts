/**
 * P3: lines/s from 8 children printing 200,000 lines each, through the supervisor, the bus
 * and the state database, to 10 SSE clients, against a bare child piped through split2 into
 * JSON.stringify. Target ≥ 0.5×; every client receives every line, in order, once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { runJson, startService, startStaged } from './lib/child.js';
import { benchScript, WORK_DIR } from './lib/paths.js';
import type { Row } from './lib/report.js';

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

export async function runP3(runs: number): Promise<Row[]> {
  const tool = benchScript('tools/line-printer.js');
  const figures: number[] = [];
  const baselines: number[] = [];
  const problems: string[] = [];
  for (let run = 0; run < runs; run++) {
    const base = await runJson<{ lines: number; ms: number }>(benchScript('baselines/split2-json.js'), [tool, String(CHILDREN), String(LINES)]);
    baselines.push(base.lines / (base.ms / 1000));

    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p3-state-'));
    const svc = await startService({
      CONSOLE_DATA_DIR: path.join(WORK_DIR, 'p3-store'),
      CONSOLE_STATE_DIR: state,
      DISPATCH_CLI: tool,
      BENCH_LINES: String(LINES),
      CONSOLE_SSE_MAX_QUEUE_BYTES: String(512 * 1024 * 1024),
    });
    try {
      // Per job: the spawn event, every line, the exit event.
      const frames = CHILDREN * (LINES + 2);
      const clients = startStaged<ClientsResult>(benchScript('load/sse-clients.js'), [
        JSON.stringify({ url: svc.url, clients: CLIENTS, expectExits: CHILDREN, expectFrames: frames }),
      ]);
      await clients.ready;
      const t0 = Date.now();
      const answers = await Promise.all(
        Array.from({ length: CHILDREN }, () =>
          fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'p3' }) }),
        ),
      );
      if (answers.some((a) => a.status !== 202)) throw new Error(`generation answered ${answers.map((a) => a.status).join(',')}`);
      const r = await clients.result;
      figures.push((CHILDREN * LINES) / ((r.doneAt - t0) / 1000));
      // Client 0 checked every line of every job; the others match its events exactly.
      if (r.lines[0] !== CHILDREN * LINES) problems.push(`client 0 saw ${r.lines[0]} lines`);
      const differ = r.frames.filter((f, i) => f !== frames || r.hashes[i] !== r.hashes[0]).length;
      if (differ > 0) problems.push(`${differ} clients differ from client 0 (${r.frames.join(',')})`);
      if (r.errors.length > 0) problems.push(r.errors.slice(0, 3).join('; '));
    } finally {
      await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const ratios = figures.map((f, i) => f / (baselines[i] as number));
  const median = [...ratios].sort((a, b) => a - b)[Math.floor((ratios.length - 1) / 2)] as number;
  return [
    {
      id: 'P3',
      measure: `lines/s, ${CHILDREN} children × ${LINES} lines → bus → DB → ${CLIENTS} SSE clients`,
      unit: 'lines/s',
      figures,
      baselines,
      ratios,
      target: '≥ 0.5×, no loss',
      pass: median >= 0.5 && problems.length === 0,
      ...(problems.length ? { note: problems.join(' | ') } : {}),
    },
  ];
}
