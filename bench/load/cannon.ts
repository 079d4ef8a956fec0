/**
 * Load generator process (autocannon as a library): reads its options as JSON from argv[2]
 * (or from the file `@<path>`)
 * and prints one JSON line: requests/s (mean), latency p50/p99 (ms), errors, non-2xx.
 */
import fs from 'node:fs';
import autocannon from 'autocannon';

// `@<file>` reads the options from a file (long path lists do not fit in argv).
const arg = process.argv[2] ?? '{}';
const opts = JSON.parse(arg.startsWith('@') ? fs.readFileSync(arg.slice(1), 'utf8') : arg) as {
  url: string;
  paths: string[];
  connections: number;
  durationS: number;
};
const result = await autocannon({
  url: opts.url,
  connections: opts.connections,
  duration: opts.durationS,
  requests: opts.paths.map((p) => ({ method: 'GET', path: p })),
});
process.stdout.write(
  `${JSON.stringify({
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    total: result.requests.total,
    bytesPerSec: result.throughput.average,
  })}\n`,
);
