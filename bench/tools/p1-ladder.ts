/**
 * The P1 ladder (for the notes on P1 in bench/RESULTS.md): server CPU time per request for
 * one route's answers at a fixed, unsaturated request rate (autocannon `overallRate`), so
 * that the figures are the servers' own cost rather than the contention of a saturated
 * 2-core machine. Rungs, each its own process: node:http serving the service's bytes from
 * memory; one Express 5 route serving the same bytes the same way; the bare Express route of
 * the P1 baseline (200 bytes through `res.json`); the service. Usage:
 *   node bench/.work/dist/tools/p1-ladder.js [route (episodes|beats|takes|lineage)] [req/s]
 */
import fs from 'node:fs';
import path from 'node:path';
import autocannon from 'autocannon';
import { cpuMsOf, startServer, startService, type Running } from '../lib/child.js';
import { benchScript, WORK_DIR } from '../lib/paths.js';
import { BIG_STORE, ensureBigStore, routePaths } from '../p1-read-routes.js';

const route = process.argv[2] ?? 'beats';
const rate = Number(process.argv[3] ?? 2000);
ensureBigStore();
const paths = routePaths()[route];
if (!paths) throw new Error(`unknown route ${route}`);
const state = fs.mkdtempSync(path.join(WORK_DIR, 'ladder-'));
const svc = await startService({ CONSOLE_DATA_DIR: BIG_STORE, CONSOLE_STATE_DIR: state });
const bytes: Record<string, { type: string; body: string }> = {};
for (const p of paths) {
  const r = await fetch(svc.url + p);
  bytes[p] = { type: r.headers.get('content-type') ?? 'application/json', body: Buffer.from(await r.arrayBuffer()).toString('base64') };
}
const bytesFile = path.join(state, 'answers.json');
fs.writeFileSync(bytesFile, JSON.stringify(bytes));
const servers: [string, Running, string[]][] = [
  ['node:http, same bytes from memory', await startServer(benchScript('servers/same-bytes.js'), '/health', { BENCH_BYTES_FILE: bytesFile }), paths],
  ['one Express 5 route, same bytes', await startServer(benchScript('servers/same-bytes.js'), '/health', { BENCH_BYTES_FILE: bytesFile, BENCH_EXPRESS: '1' }), paths],
  ['bare Express route, 200 bytes (res.json)', await startServer(benchScript('servers/bare-express.js'), '/health'), ['/json']],
  ['the service', svc, paths],
];
try {
  for (const [name, server, ps] of servers) {
    const opts = { url: server.url, connections: 8, overallRate: rate, requests: ps.map((p) => ({ method: 'GET' as const, path: p })) };
    await autocannon({ ...opts, duration: 2 }); // warm-up
    const c0 = cpuMsOf(server.proc.pid) ?? 0;
    const r = await autocannon({ ...opts, duration: 5 });
    const used = (cpuMsOf(server.proc.pid) ?? 0) - c0;
    process.stdout.write(`${name}: ${((used * 1000) / r.requests.total).toFixed(0)} µs CPU/request (${r.requests.total} requests, p99 ${r.latency.p99} ms)\n`);
  }
} finally {
  for (const [, server] of servers) await server.stop();
  fs.rmSync(state, { recursive: true, force: true });
}
