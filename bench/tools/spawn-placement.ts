/**
 * Where a job's spawn should run (groundwork of the worker-threaded supervisor): the main thread's
 * event-loop delay while 64 children are spawned at once and their pipes read to the end, with the
 * spawns made on the main thread (as the supervisor does today), on a worker thread, or in a
 * helper process of its own (in the last two the main thread only waits for a message). No
 * service: the process measures itself, so the figures are those of the spawn's placement alone.
 *
 *   node bench/.work/dist/tools/spawn-placement.js [rounds=10] [children=64] [lines=3] [ballastMb=0]
 *
 * `ballastMb` first fills that much memory (touched, so resident), and during each round and floor
 * the main thread writes a byte to 256 of its pages every millisecond, as a serving thread writes
 * its heap: a fork copies the page tables of the whole process and write-protects its pages,
 * whichever thread calls it, so the service's size, and its writes after a fork, matter to its cost.
 *
 * Rounds rotate the order of the placements after one warm-up round of each. A round
 * measures the main thread's loop delay (perf_hooks.monitorEventLoopDelay, 1 ms resolution) from the
 * first spawn until every child exited and its pipe ended, and a floor (the same length of time
 * with nothing to do) before each. Prints one JSON object: per placement the rounds' p99 and max
 * delay and the time to the last exit, in ms, and the medians.
 */
import { fork, spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';

const here = path.dirname(fileURLToPath(import.meta.url));
/** The benchmarks' tiny dispatch tool (line-printer.ts), built beside this file. */
const TOOL = path.join(here, 'line-printer.js');

interface Order {
  readonly children: number;
  readonly lines: number;
}

/** Spawns `children` tools as the supervisor does (own process group, pipes, no shell) and reads every line; resolves to the lines read. */
function spawnAll({ children, lines }: Order): Promise<number> {
  const env = { ...process.env, BENCH_LINES: String(lines) } as Record<string, string>;
  let read = 0;
  const ended = Array.from(
    { length: children },
    () =>
      new Promise<void>((resolve, reject) => {
        const child = spawn(process.execPath, [TOOL, '--project', 'placement'], { detached: true, stdio: ['ignore', 'pipe', 'pipe'], env, shell: false });
        child.on('error', reject);
        let closed = 0;
        const done = () => {
          if (++closed === 3) resolve();
        };
        child.stdout.on('data', (b: Buffer) => {
          for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) read++;
        });
        child.stdout.on('end', done);
        child.stderr.resume().on('end', done);
        child.on('exit', done);
      }),
  );
  return Promise.all(ended).then(() => read);
}

if (!isMainThread) {
  // The worker: one order at a time, answered with the lines read.
  parentPort?.on('message', (order: Order) => {
    void spawnAll(order).then((read) => parentPort?.postMessage(read));
  });
} else if (process.argv[2] === 'helper') {
  // The helper process: the same, over its IPC channel.
  process.on('message', (order: Order) => {
    void spawnAll(order).then((read) => process.send?.(read));
  });
} else {
  await main();
}

interface Round {
  readonly p99: number;
  readonly max: number;
  readonly ms: number;
  readonly floorP99: number;
}

async function main(): Promise<void> {
  const [rounds = 10, children = 64, lines = 3, ballastMb = 0] = process.argv.slice(2).map(Number);
  const ballast = Array.from({ length: ballastMb }, () => Buffer.alloc(1 << 20, 1));
  const order: Order = { children, lines };
  const worker = new Worker(fileURLToPath(import.meta.url), { workerData: 'spawner' });
  const inWorker = (): Promise<number> =>
    new Promise((resolve) => {
      worker.once('message', resolve);
      worker.postMessage(order);
    });
  const helper = fork(fileURLToPath(import.meta.url), ['helper'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const inHelper = (): Promise<number> =>
    new Promise((resolve) => {
      helper.once('message', (read) => resolve(read as number));
      helper.send(order);
    });
  const placements = { main: () => spawnAll(order), worker: inWorker, process: inHelper };
  const h = monitorEventLoopDelay({ resolution: 1 });
  h.enable();
  let page = 0;
  const pages = ballastMb * 256;
  const writer = setInterval(() => {
    for (let k = 0; k < 256 && pages > 0; k++, page = (page + 1) % pages) (ballast[page >> 8] as Buffer)[(page & 255) << 12] = k;
  }, 1);
  const ms = (ns: number) => ns / 1e6;
  const measure = async (how: keyof typeof placements): Promise<Round> => {
    h.reset();
    const t0 = performance.now();
    const read = await placements[how]();
    const took = performance.now() - t0;
    if (read !== children * lines) throw new Error(`${how}: read ${read} lines, not ${children * lines}`);
    const p99 = ms(h.percentile(99));
    const max = ms(h.max);
    // The floor: as long again with nothing to do.
    h.reset();
    await new Promise((r) => setTimeout(r, took));
    return { p99, max, ms: took, floorP99: ms(h.percentile(99)) };
  };
  const order3: (keyof typeof placements)[] = ['main', 'worker', 'process'];
  for (const how of order3) await measure(how);
  const results: Record<keyof typeof placements, Round[]> = { main: [], worker: [], process: [] };
  for (let i = 0; i < rounds; i++) {
    // Each placement first, middle and last in turn.
    const turn = [...order3.slice(i % 3), ...order3.slice(0, i % 3)];
    for (const how of i % 2 === 0 ? turn : turn.reverse()) results[how].push(await measure(how));
  }
  clearInterval(writer);
  await worker.terminate();
  helper.kill();
  const rssMb = Math.round(process.memoryUsage().rss / 2 ** 20);
  ballast.length = 0;
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
  const summary = Object.fromEntries(
    Object.entries(results).map(([how, rs]) => [
      how,
      {
        p99Ms: rs.map((r) => r.p99),
        maxMs: rs.map((r) => r.max),
        lastExitMs: rs.map((r) => Math.round(r.ms)),
        floorP99Ms: rs.map((r) => r.floorP99),
        median: { p99Ms: median(rs.map((r) => r.p99)), maxMs: median(rs.map((r) => r.max)), lastExitMs: median(rs.map((r) => r.ms)), floorP99Ms: median(rs.map((r) => r.floorP99)) },
      },
    ]),
  );
  console.log(JSON.stringify({ node: process.version, rounds, children, lines, ballastMb, rssMb, ...summary }, null, 2));
}
