/**
 * P3 baseline: `children` line printers started at once, each stdout piped through split2
 * into JSON.stringify of an event-shaped object. Prints {lines, ms}.
 */
import { spawn } from 'node:child_process';
import split2 from 'split2';

const [tool, childrenArg, linesArg] = process.argv.slice(2) as [string, string, string];
const children = Number(childrenArg);
let lines = 0;
let bytes = 0;
const t0 = performance.now();
await Promise.all(
  Array.from({ length: children }, () => {
    const child = spawn(process.execPath, [tool], { env: { ...process.env, BENCH_LINES: linesArg }, stdio: ['ignore', 'pipe', 'ignore'] });
    return new Promise<void>((resolve) => {
      child.stdout
        .pipe(split2())
        .on('data', (line: string) => {
          lines++;
          bytes += JSON.stringify({ severity: 'info', scope: 'engine/generation', summary: line, detail: null, payload: { source: 'dispatch_cli' } }).length;
        })
        .on('end', resolve);
    });
  }),
);
process.stdout.write(`${JSON.stringify({ lines, ms: performance.now() - t0, bytes })}\n`);
