/**
 * What a worker thread's buffers cost the main thread's garbage collector, by how they arrive
 * (bench/RESULTS.md, "the garbage collector's larger share at full speed"). A worker sends `count`
 * buffers of `bytes` each, ten in flight; the main thread reads each one's length and drops it.
 * Four ways:
 *
 * - `transfer`: the worker's ArrayBuffer is transferred (moved, not copied), as the replay
 *   thread's blocks are;
 * - `clone`: the same buffer posted without a transfer list, so the message copies it;
 * - `local`: no worker; the main thread allocates the buffers itself (Buffer.allocUnsafeSlow);
 * - `string`: the worker sends a string of the same length.
 *
 *   node bench/.work/dist/tools/transfer-gc.js [mode=all|transfer|clone|local|string] [count=8000] [bytes=200000]
 *
 * Prints one JSON object per mode: the main thread's mark-compacts, scavenges and the time in them.
 * Each mode runs in a process of its own (the collector's state is per process).
 */
import { spawnSync } from 'node:child_process';
import { constants, type PerformanceEntry, PerformanceObserver } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

type Mode = 'transfer' | 'clone' | 'local' | 'string';
const MODES: readonly Mode[] = ['transfer', 'clone', 'local', 'string'];
const IN_FLIGHT = 10;

interface Args {
  readonly mode: Mode;
  readonly count: number;
  readonly bytes: number;
}

/** The worker: answers each request with one buffer (or string) made the way `mode` says. */
function serve({ mode, bytes }: Args): void {
  const text = 'x'.repeat(bytes - 8);
  parentPort?.on('message', (i: number) => {
    if (mode === 'string') parentPort?.postMessage(text + String(i).padStart(8, '0'));
    else {
      const ab = Buffer.allocUnsafeSlow(bytes).buffer as ArrayBuffer;
      parentPort?.postMessage(ab, mode === 'transfer' ? [ab] : []);
    }
  });
}

/** The main thread of one mode's process: counts its collections while the buffers arrive. */
async function measure({ mode, count, bytes }: Args): Promise<void> {
  const gcs = { markCompacts: 0, scavenges: 0, ms: 0 };
  const observer = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      const kind = (e as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind;
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) gcs.markCompacts++;
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) gcs.scavenges++;
      gcs.ms += e.duration;
    }
  });
  observer.observe({ entryTypes: ['gc'] });
  // A live heap, as a service keeps one.
  const live = Array.from({ length: 200_000 }, (_, i) => ({ i, s: `v${i}` }));
  let seen = 0;
  const started = performance.now();
  if (mode === 'local') {
    while (seen < count) {
      for (let i = 0; i < IN_FLIGHT; i++) seen += Buffer.allocUnsafeSlow(bytes).length > 0 ? 1 : 0;
      await new Promise((r) => setImmediate(r));
    }
  } else {
    const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { mode, count, bytes } satisfies Args });
    await new Promise<void>((resolve) => {
      worker.on('message', (m: ArrayBuffer | string) => {
        if ((typeof m === 'string' ? m.length : m.byteLength) > 0) seen++;
        if (seen >= count) resolve();
        else worker.postMessage(seen);
      });
      for (let i = 0; i < IN_FLIGHT; i++) worker.postMessage(i);
    });
    await worker.terminate();
  }
  const ms = performance.now() - started;
  // Entries are delivered after the turn they were made in.
  await new Promise((r) => setTimeout(r, 50));
  observer.disconnect();
  console.log(JSON.stringify({ mode, count, bytes, ms: Math.round(ms), markCompacts: gcs.markCompacts, scavenges: gcs.scavenges, gcMs: Math.round(gcs.ms), live: live.length }));
}

if (!isMainThread) serve(workerData as Args);
else {
  const [which = 'all', count = '8000', bytes = '200000'] = process.argv.slice(2);
  const child = process.env.TRANSFER_GC_CHILD;
  if (child !== undefined) await measure({ mode: child as Mode, count: Number(count), bytes: Number(bytes) });
  else {
    for (const mode of which === 'all' ? MODES : [which as Mode]) {
      if (!MODES.includes(mode)) throw new Error(`mode: one of all, ${MODES.join(', ')}`);
      const run = spawnSync(process.execPath, [fileURLToPath(import.meta.url), mode, count, bytes], {
        env: { ...process.env, TRANSFER_GC_CHILD: mode },
        stdio: ['ignore', 'pipe', 'inherit'],
        encoding: 'utf8',
      });
      process.stdout.write(run.stdout);
    }
  }
}
