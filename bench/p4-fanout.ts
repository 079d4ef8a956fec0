/**
 * P4: events/s fanned out to 100 SSE clients (events are the lines of one generation job),
 * against a bare Express route writing the same frames; target ≥ 0.8×, no loss. And 1,000
 * idle SSE clients held with < 50 KB of RSS each.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, startService, startStaged } from './lib/child.js';
import { benchScript, WORK_DIR, emptyStoreDir } from './lib/paths.js';
import type { Row } from './lib/report.js';

const CLIENTS = 100;
const EVENTS = Number(process.env.BENCH_P4_EVENTS ?? 50_000);
const IDLE = 1000;

interface ClientsResult {
  doneAt: number;
  frames: number[];
  hashes: number[];
  lines: number[];
  errors: string[];
}

export async function runP4(runs: number): Promise<Row[]> {
  const tool = benchScript('tools/line-printer.js');
  const figures: number[] = [];
  const baselines: number[] = [];
  const perIdle: number[] = [];
  const problems: string[] = [];
  for (let run = 0; run < runs; run++) {
    // Baseline: the bare route.
    const bare = await startServer(benchScript('servers/bare-sse.js'), '/health');
    try {
      const c = startStaged<ClientsResult>(benchScript('load/sse-clients.js'), [JSON.stringify({ url: bare.url, clients: CLIENTS, expectFrames: EVENTS, path: '/frames' })]);
      await c.ready;
      const t0 = Date.now();
      await fetch(`${bare.url}/start?n=${EVENTS}`, { method: 'POST' });
      const r = await c.result;
      baselines.push(EVENTS / ((r.doneAt - t0) / 1000));
    } finally {
      await bare.stop();
    }

    // The service: one job printing EVENTS lines, 100 clients.
    const state = fs.mkdtempSync(path.join(WORK_DIR, 'p4-state-'));
    const svc = await startService({
      CONSOLE_DATA_DIR: emptyStoreDir(),
      CONSOLE_STATE_DIR: state,
      DISPATCH_CLI: tool,
      BENCH_LINES: String(EVENTS),
      CONSOLE_SSE_MAX_QUEUE_BYTES: String(256 * 1024 * 1024),
      // The row measures fan-out with no client dropped: the bound on all clients' queued bytes at its most.
      CONSOLE_SSE_TOTAL_QUEUE_BYTES: String(16 * 1024 * 1024 * 1024),
      // The 100 clients and the idle ones all come from 127.0.0.1: no bound per address, and room for all.
      CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS: '0',
      CONSOLE_SSE_MAX_STREAMS: String(CLIENTS + IDLE + 100),
    });
    try {
      const c = startStaged<ClientsResult>(benchScript('load/sse-clients.js'), [JSON.stringify({ url: svc.url, clients: CLIENTS, expectExits: 1, expectFrames: EVENTS + 2 })]);
      await c.ready;
      const t0 = Date.now();
      const a = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":"p4"}' });
      if (a.status !== 202) throw new Error(`generation answered ${a.status}`);
      const r = await c.result;
      figures.push(EVENTS / ((r.doneAt - t0) / 1000));
      if (r.lines[0] !== EVENTS) problems.push(`client 0 saw ${r.lines[0]} lines`);
      const differ = r.frames.filter((f, i) => f !== EVENTS + 2 || r.hashes[i] !== r.hashes[0]).length;
      if (differ) problems.push(`${differ} clients differ from client 0`);
      if (r.errors.length) problems.push(r.errors[0] as string);

      // 1,000 idle clients: RSS per client.
      await new Promise((res) => setTimeout(res, 500));
      const before = svc.rss() as number;
      const idle = spawn(process.execPath, [benchScript('load/idle-clients.js'), svc.url, String(IDLE)], { stdio: ['pipe', 'pipe', 'inherit'] });
      await new Promise<void>((resolve) => idle.stdout.on('data', (d: Buffer) => d.toString().includes('ready') && resolve()));
      await new Promise((res) => setTimeout(res, 1000));
      const after = svc.rss() as number;
      perIdle.push((after - before) / IDLE / 1024);
      idle.stdin.end();
      await new Promise((res) => idle.on('close', res));
    } finally {
      await svc.stop();
      fs.rmSync(state, { recursive: true, force: true });
    }
  }
  const ratios = figures.map((f, i) => f / (baselines[i] as number));
  const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor((xs.length - 1) / 2)] as number;
  return [
    {
      id: 'P4',
      measure: `events/s fanned out to ${CLIENTS} SSE clients (${EVENTS} events)`,
      unit: 'events/s',
      figures,
      baselines,
      ratios,
      target: '≥ 0.8×, no loss',
      pass: median(ratios) >= 0.8 && problems.length === 0,
      ...(problems.length ? { note: problems.slice(0, 2).join(' | ') } : {}),
    },
    {
      id: 'P4 idle',
      measure: `RSS per idle SSE client (${IDLE} clients)`,
      unit: 'KB',
      figures: perIdle,
      baselines: null,
      ratios: null,
      target: '< 50 KB',
      pass: median(perIdle) < 50,
    },
  ];
}
