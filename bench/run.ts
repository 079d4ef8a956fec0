/**
 * `npm run bench`: runs every row (or those named on the command line, e.g.
 * `npm run bench -- P1 P3`), prints the table and appends it to bench/RESULTS.md, with the
 * machine's load average at the start and at the end of the run (other work on the machine
 * takes CPU from every figure).
 */
import fs from 'node:fs';
import os from 'node:os';
import { WORK_DIR } from './lib/paths.js';
import { appendResults, table, type Row } from './lib/report.js';
import { runP1 } from './p1-read-routes.js';
import { runP2 } from './p2-spawn.js';
import { runP3 } from './p3-lines.js';
import { runP4 } from './p4-fanout.js';
import { runP5 } from './p5-loop-delay.js';
import { runP6 } from './p6-soak.js';
import { runP7 } from './p7-storm.js';
import { runP8 } from './p8-synthesis.js';
import { runC1 } from './c1-cluster.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const all: Record<string, (runs: number) => Promise<Row[]>> = {
  P1: runP1,
  P2: runP2,
  P3: runP3,
  P4: runP4,
  P5: runP5,
  P6: runP6,
  P7: runP7,
  P8: runP8,
  C1: runC1,
};

const wanted = process.argv.slice(2).map((s) => s.toUpperCase());
const unknown = wanted.filter((id) => !(id in all));
if (unknown.length > 0) {
  // A mistyped row would otherwise append an empty table to bench/RESULTS.md.
  process.stderr.write(`unknown rows: ${unknown.join(', ')} (rows: ${Object.keys(all).join(', ')})\n`);
  process.exit(2);
}
const selected = Object.entries(all).filter(([id]) => wanted.length === 0 || wanted.includes(id));
fs.mkdirSync(WORK_DIR, { recursive: true });
const rows: Row[] = [];
const started = Date.now();
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' / ');
const loadAtStart = load();
for (const [id, run] of selected) {
  process.stderr.write(`${id}…\n`);
  const t0 = Date.now();
  rows.push(...(await run(RUNS)));
  process.stderr.write(`${id} done in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
}
const text = table(rows);
process.stdout.write(`${text}\n\nTotal ${((Date.now() - started) / 1000).toFixed(0)} s, ${RUNS} runs per row.\n`);
const loadNote = `Load average (1 / 5 / 15 min): ${loadAtStart} at the start, ${load()} at the end.`;
process.stdout.write(`${loadNote}\n`);
if (process.env.BENCH_NO_RECORD !== '1') {
  const service = process.env.BENCH_SERVICE_ENTRY ? `the service of ${process.env.BENCH_SERVICE_ENTRY}` : 'this tree';
  appendResults(rows, `Node.js ${process.version}, ${service}. Rows: ${selected.map(([id]) => id).join(', ')}; ${RUNS} runs each; total ${((Date.now() - started) / 1000).toFixed(0)} s. ${loadNote}`);
}
