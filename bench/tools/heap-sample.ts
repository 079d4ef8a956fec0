/**
 * Preloaded into the service (`NODE_OPTIONS=--import <this file's build>`) to find what it
 * allocates: V8's sampling heap profiler from start-up, every allocation kept (also those
 * collected since), written on SIGUSR2 to `$BENCH_HEAP_SAMPLE_DIR/sample-<pid>.heapsnapshot`
 * (the name P6's BENCH_P6_HEAPSNAPSHOT waits for; the content is a sampling heap profile, read by
 * allocation-summary). Pass both variables through BENCH_SERVICE_ENV.
 */
import fs from 'node:fs';
import inspector from 'node:inspector';
import path from 'node:path';

const dir = process.env.BENCH_HEAP_SAMPLE_DIR ?? '.';
const session = new inspector.Session();
session.connect();
session.post('HeapProfiler.startSampling', { samplingInterval: 32768, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
process.on('SIGUSR2', () =>
  session.post('HeapProfiler.stopSampling', (err, r) => {
    if (err) return void process.stderr.write(`heap-sample: ${err.message}\n`);
    const tmp = path.join(dir, `.sample-${process.pid}`);
    fs.writeFileSync(tmp, JSON.stringify(r.profile));
    // Renamed when complete: the reader waits for the final name.
    fs.renameSync(tmp, path.join(dir, `sample-${process.pid}.heapsnapshot`));
  }),
);
