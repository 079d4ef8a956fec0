/**
 * Summarises a sampling heap profile (bench/tools/heap-sample) for bench/RESULTS.md: bytes
 * allocated per call stack (its innermost `--depth` frames), the largest first; with
 * `--min <bytes>`, only allocations of at least that size (`--min 131072`: the large objects,
 * which only a full collection frees). Usage:
 *   node bench/.work/dist/tools/allocation-summary.js <file> [--depth 4] [--min 0] [--top 20]
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';

interface SampleNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children: SampleNode[];
}
interface SamplingProfile {
  head: SampleNode;
  samples: { size: number; nodeId: number }[];
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { depth: { type: 'string', default: '4' }, min: { type: 'string', default: '0' }, top: { type: 'string', default: '20' } },
});
const file = positionals[0];
if (file === undefined) throw new Error('usage: allocation-summary <file> [--depth 4] [--min 0] [--top 20]');
const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as SamplingProfile;
const nodes = new Map<number, { node: SampleNode; parent: number | null }>();
const walk = (n: SampleNode, parent: number | null): void => {
  nodes.set(n.id, { node: n, parent });
  for (const c of n.children) walk(c, n.id);
};
walk(profile.head, null);
const stackOf = (id: number): string => {
  const frames: string[] = [];
  for (let x: number | null = id; x !== null && frames.length < Number(values.depth); x = nodes.get(x)?.parent ?? null) {
    const f = (nodes.get(x) as { node: SampleNode }).node.callFrame;
    if (f.functionName || f.url) frames.push(`${f.functionName || '(anonymous)'} ${f.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/dist\//, 'dist/')}:${f.lineNumber + 1}`);
  }
  return frames.join(' < ');
};
let total = 0;
let counted = 0;
const bytes = new Map<string, number>();
for (const s of profile.samples) {
  total += s.size;
  if (s.size < Number(values.min)) continue;
  counted += s.size;
  const k = stackOf(s.nodeId);
  bytes.set(k, (bytes.get(k) ?? 0) + s.size);
}
const mb = (b: number) => (b / 2 ** 20).toFixed(1);
console.log(`allocated ${mb(total)} MB (sampled); ${mb(counted)} MB in allocations of at least ${values.min} bytes`);
for (const [k, b] of [...bytes].sort((a, c) => c[1] - a[1]).slice(0, Number(values.top))) console.log(`${mb(b).padStart(8)} MB ${((100 * b) / counted).toFixed(1).padStart(5)}%  ${k}`);
