/**
 * Summarises a V8 CPU profile (`node --cpu-prof`) for bench/RESULTS.md: the share of the
 * samples spent in each function itself (self time), the largest first, with the share of
 * (garbage collector), (idle) and (program); and, with `--by-file`, self time grouped by
 * source file (node: internals, node_modules packages, the service's own modules), which
 * says which layer the time goes to. Usage:
 *   node bench/.work/dist/tools/profile-summary.js <file.cpuprofile> [--top 30] [--by-file]
 *     [--from <ms>] [--to <ms>]
 * `--from`/`--to` keep the samples of a window (ms from the start of the profile).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { top: { type: 'string' }, 'by-file': { type: 'boolean' }, from: { type: 'string' }, to: { type: 'string' } },
});
const file = positionals[0];
if (!file) {
  process.stderr.write('usage: profile-summary <file.cpuprofile> [--top N] [--by-file] [--from ms] [--to ms]\n');
  process.exit(2);
}
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const from = Number(values.from ?? 0) * 1000;
const to = values.to === undefined ? Infinity : Number(values.to) * 1000;

/** Where a frame comes from: a package, a node internal, or a file of the service. */
function layer(url: string): string {
  if (url === '') return '(native or V8)';
  if (url.startsWith('node:')) return url;
  const nm = url.lastIndexOf('node_modules/');
  if (nm !== -1) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]?.startsWith('@') ? `${rest[0]}/${rest[1]}` : (rest[0] as string);
  }
  const dist = url.indexOf('/dist/');
  return dist !== -1 ? url.slice(dist + 1) : url;
}

const self = new Map<string, number>();
let total = 0;
let t = 0;
for (let i = 0; i < profile.samples.length; i++) {
  const dt = profile.timeDeltas[i] ?? 0;
  t += dt;
  if (t < from || t > to) continue;
  const node = byId.get(profile.samples[i] as number);
  if (!node) continue;
  const f = node.callFrame;
  const key = values['by-file'] ? layer(f.url) : f.url === '' ? f.functionName || '(anonymous)' : `${f.functionName || '(anonymous)'} ${layer(f.url)}:${f.lineNumber + 1}`;
  self.set(key, (self.get(key) ?? 0) + dt);
  total += dt;
}
const top = Number(values.top ?? 30);
const rows = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, top);
process.stdout.write(`profile ${file}: ${(total / 1e6).toFixed(2)} s of samples\n`);
for (const [key, us] of rows) process.stdout.write(`${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}\n`);
