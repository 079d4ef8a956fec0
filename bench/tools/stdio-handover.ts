/**
 * How a job's output can reach its reader when a helper process makes the spawn (groundwork of the
 * worker-threaded supervisor: a fork from the service costs its main thread a copy of its page
 * tables, see spawn-placement). Runs `jobs` short children, `concurrency` at a time, each writing
 * `lines` lines on stdout and one on stderr and exiting at once, and counts the jobs whose output
 * did not all arrive. Two ways:
 *
 * - `handback`: the helper spawns with pipes and sends both back over its IPC channel. The helper
 *   has started reading them by then (a socket reads from its creation), so what it read before
 *   the handover is lost with its copy.
 * - `pairs`: the reader makes a socket pair per stream (a unix-socket server with
 *   `pauseOnConnect`, so the accepted end is never read here), sends the accepted ends to the
 *   helper, which spawns with them as stdout and stderr and closes its copies. The reader never
 *   ends its side: a copy that saw EOF would shut the shared socket down.
 *
 *   node bench/.work/dist/tools/stdio-handover.js [mode=pairs|handback|both] [jobs=200] [lines=100] [concurrency=16]
 *
 * Prints one JSON object per mode: jobs, jobs with output missing, ms.
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

interface SpawnOrder {
  readonly kind: 'spawn';
  readonly id: number;
  readonly file: string;
  readonly args: string[];
}
type ToHelper = SpawnOrder | { readonly kind: 'stdio'; readonly id: number; readonly stream: 'stdout' | 'stderr' };
type FromHelper = { readonly kind: 'exit'; readonly id: number; readonly code: number | null } | { readonly kind: 'stdio'; readonly id: number; readonly stream: 'stdout' | 'stderr' };

const here = fileURLToPath(import.meta.url);

/** The helper: spawns on order; in `pairs` mode with the sockets it was sent, else with pipes it sends back. */
function helper(mode: string): void {
  const send = (m: FromHelper, handle?: net.Socket) => process.send?.(m, handle);
  const waiting = new Map<number, { stdout?: net.Socket; stderr?: net.Socket; order?: SpawnOrder }>();
  process.on('message', (m: ToHelper, handle?: net.Socket) => {
    const job = waiting.get(m.id) ?? {};
    waiting.set(m.id, job);
    if (m.kind === 'stdio') job[m.stream] = handle;
    else job.order = m;
    const { order } = job;
    if (order === undefined || (mode === 'pairs' && (job.stdout === undefined || job.stderr === undefined))) return;
    waiting.delete(m.id);
    let child: ChildProcess;
    if (mode === 'pairs') {
      child = spawn(order.file, order.args, { stdio: ['ignore', job.stdout as net.Socket, job.stderr as net.Socket], detached: true });
      job.stdout?.destroy();
      job.stderr?.destroy();
    } else {
      child = spawn(order.file, order.args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      send({ kind: 'stdio', id: order.id, stream: 'stdout' }, child.stdout as net.Socket);
      send({ kind: 'stdio', id: order.id, stream: 'stderr' }, child.stderr as net.Socket);
    }
    child.on('exit', (code) => send({ kind: 'exit', id: order.id, code }));
  });
}

/** Socket pairs made one at a time (so the n-th accept is the n-th connect); `far` is never read here. */
async function pairMaker(): Promise<{ pair: () => Promise<{ near: net.Socket; far: net.Socket }>; close: () => void }> {
  const accepted: ((s: net.Socket) => void)[] = [];
  const server = net.createServer({ pauseOnConnect: true }, (s) => accepted.shift()?.(s));
  server.listen(`\0stdio-handover-${process.pid}`);
  await once(server, 'listening');
  let chain: Promise<unknown> = Promise.resolve();
  const pair = () => {
    const made = chain.then(async () => {
      const far = new Promise<net.Socket>((resolve) => accepted.push(resolve));
      const near = net.connect(`\0stdio-handover-${process.pid}`);
      await once(near, 'connect');
      return { near, far: await far };
    });
    chain = made;
    return made;
  };
  return { pair, close: () => server.close() };
}

function collect(s: net.Socket): Promise<string> {
  let text = '';
  s.setEncoding('utf8').on('data', (d: string) => (text += d));
  return once(s, 'end').then(() => text);
}

async function run(mode: string, jobs: number, lines: number, concurrency: number): Promise<{ mode: string; jobs: number; missing: number; ms: number }> {
  const h = fork(here, ['helper', mode]);
  const exits = new Map<number, (code: number | null) => void>();
  const handed = new Map<number, (m: { stream: string }, s: net.Socket | undefined) => void>();
  h.on('message', (m: FromHelper, s?: net.Socket) => {
    if (m.kind === 'exit') exits.get(m.id)?.(m.code);
    else handed.get(m.id)?.(m, s);
  });
  const pairs = await pairMaker();
  const code = `process.stdout.write(Array.from({ length: ${lines} }, (_, i) => "line " + i + "\\n").join("")); process.stderr.write("last words\\n")`;
  let missing = 0;
  let next = 0;
  const t0 = performance.now();
  const one = async (id: number) => {
    const exited = new Promise<number | null>((resolve) => exits.set(id, resolve));
    let out: Promise<string>;
    let err: Promise<string>;
    if (mode === 'pairs') {
      const [o, e] = [await pairs.pair(), await pairs.pair()];
      out = collect(o.near);
      err = collect(e.near);
      h.send({ kind: 'stdio', id, stream: 'stdout' } satisfies ToHelper, o.far);
      h.send({ kind: 'stdio', id, stream: 'stderr' } satisfies ToHelper, e.far);
    } else {
      const got = new Map<string, Promise<string>>();
      const both = new Promise<void>((resolve) =>
        handed.set(id, (m, s) => {
          // A pipe that closed in the helper before the handover arrives without its handle.
          got.set(m.stream, s === undefined ? Promise.resolve('') : collect(s));
          if (got.size === 2) resolve();
        }),
      );
      out = both.then(() => got.get('stdout') as Promise<string>);
      err = both.then(() => got.get('stderr') as Promise<string>);
    }
    h.send({ kind: 'spawn', id, file: process.execPath, args: ['-e', code] } satisfies ToHelper);
    const [rc, o, e] = await Promise.all([exited, out, err]);
    if (rc !== 0 || o.split('\n').filter(Boolean).length !== lines || e !== 'last words\n') missing++;
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < jobs) await one(next++);
    }),
  );
  const ms = Math.round(performance.now() - t0);
  h.kill();
  pairs.close();
  return { mode, jobs, missing, ms };
}

if (process.argv[2] === 'helper') {
  helper(process.argv[3] as string);
} else {
  const [mode = 'both', jobs = '200', lines = '100', concurrency = '16'] = process.argv.slice(2);
  for (const m of mode === 'both' ? ['pairs', 'handback'] : [mode]) {
    process.stdout.write(`${JSON.stringify({ node: process.version, ...(await run(m, Number(jobs), Number(lines), Number(concurrency))) })}\n`);
  }
}
