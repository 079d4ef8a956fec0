/**
 * `npm run bench`: runs every row (or those named on the command line, e.g.
 * `npm run bench -- P1 P3`), prints the table and appends it to bench/RESULTS.md, with the
 * machine's load average at the start and at the end of the run (other work on the machine
 * takes CPU from every figure).
 *
 * A/B mode: with BENCH_AB_BASE set to another build's `dist/main/index.js` (the code before a
 * change), each row runs on both builds back to back, in alternating order from row to row (this
 * tree first for the first row, the base first for the next, …), and a second table sets each
 * figure of this tree beside the base's (`abTable`): "no row slower" read from one run.
 */
import fs from 'node:fs';
import os from 'node:os';
import { serviceEntry, THIS_SERVICE_ENTRY, useServiceEntry, WORK_DIR } from './lib/paths.js';
import { abTable, appendResults, table, type Row } from './lib/report.js';
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
const abBase = process.env.BENCH_AB_BASE;
if (abBase && !fs.existsSync(abBase)) {
  process.stderr.write(`BENCH_AB_BASE: no such file ${abBase} (another build's dist/main/index.js)\n`);
  process.exit(2);
}
const thisEntry = serviceEntry();
const baseRows: Row[] = [];
for (const [k, [id, run]] of selected.entries()) {
  const sides: Array<[entry: string, into: Row[], name: string]> = [[thisEntry, rows, 'this tree']];
  // The base first on every other row, so neither build always runs on the machine the other just warmed.
  if (abBase) sides.splice((k + 1) % 2, 0, [abBase, baseRows, 'the base']);
  for (const [entry, into, name] of sides) {
    useServiceEntry(entry);
    process.stderr.write(`${id}${abBase ? ` (${name})` : ''}…\n`);
    const t0 = Date.now();
    into.push(...(await run(RUNS)));
    process.stderr.write(`${id} done in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
}
useServiceEntry(thisEntry);
const abText = abBase ? `The base's own table (its figures against the baselines it ran with):\n\n${table(baseRows)}\n\nThis tree against the base:\n\n${abTable(rows, baseRows)}` : undefined;
const text = abText ? `${table(rows)}\n\n${abText}` : table(rows);
process.stdout.write(`${text}\n\nTotal ${((Date.now() - started) / 1000).toFixed(0)} s, ${RUNS} runs per row.\n`);
const loadNote = `Load average (1 / 5 / 15 min): ${loadAtStart} at the start, ${load()} at the end.`;
process.stdout.write(`${loadNote}\n`);
if (process.env.BENCH_NO_RECORD !== '1') {
  const service = thisEntry === THIS_SERVICE_ENTRY ? 'this tree' : `the service of ${thisEntry}`;
  const against = abBase ? `, and each row again on the base, ${abBase} (the A/B table below)` : '';
  appendResults(
    rows,
    `Node.js ${process.version}, ${service}${against}. Rows: ${selected.map(([id]) => id).join(', ')}; ${RUNS} runs each; total ${((Date.now() - started) / 1000).toFixed(0)} s. ${loadNote}`,
    abText,
  );
}
