/**
 * Child processes of the benchmarks: the service under test, baseline servers and load
 * generators each run in their own process, so the figures of one never include the others.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { serviceEntry } from './paths.js';

export interface Running {
  readonly proc: ChildProcess;
  readonly url: string;
  /** SIGTERM, then wait for the exit. */
  stop(): Promise<void>;
  /** Resident set size of the process in bytes (from /proc), or null. */
  rss(): number | null;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitHealthy(url: string, proc: ChildProcess, path: string): Promise<void> {
  const until = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`process exited with ${proc.exitCode} before answering ${path}`);
    try {
      const r = await fetch(url + path);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > until) throw new Error(`no answer from ${url}${path}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

function running(proc: ChildProcess, url: string): Running {
  return {
    proc,
    url,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGTERM');
      }),
    rss: () => rssOf(proc.pid),
  };
}

/** RSS of `pid` in bytes, from /proc/<pid>/status. */
export function rssOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** User + system CPU time of `pid` in ms (from /proc/<pid>/stat), or null. */
export function cpuMsOf(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * (1000 / 100); // clock ticks of 10 ms
  } catch {
    return null;
  }
}

/**
 * Starts the real service as `npm start` does (bin/console-backend) with `env` on a free port. With
 * BENCH_PROFILE_DIR set, the service writes a CPU profile of its main thread there when it
 * stops (`--cpu-prof`; summarise with bench/tools/profile-summary), for the notes. With
 * BENCH_NODE_ARGS set, its space-separated flags are given to the service's node. With
 * BENCH_SERVICE_ENV set to a JSON object of variables, they are added to the service's
 * environment (experiments of the notes, e.g. `{"CONSOLE_KILL_GRACE_MS":"60000"}`).
 */
export async function startService(env: Record<string, string>, nodeArgs: string[] = []): Promise<Running> {
  const port = await freePort();
  const prof = process.env.BENCH_PROFILE_DIR;
  if (prof && !nodeArgs.includes('--cpu-prof')) nodeArgs = [...nodeArgs, '--cpu-prof', `--cpu-prof-dir=${prof}`];
  // BENCH_NODE_ARGS: more flags for the service's node, space-separated (e.g. `--heap-prof --heap-prof-dir=/tmp/h`).
  if (process.env.BENCH_NODE_ARGS) nodeArgs = [...nodeArgs, ...process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean)];
  // As `npm start` starts it: through the tree's bin/console-backend (jemalloc when installed, else glibc's malloc
  // with 2 arenas; README, "Memory"), this runner's node first on PATH. A build from before the launcher: node
  // itself, with MALLOC_ARENA_MAX=2 as its `npm start` set.
  const entry = serviceEntry();
  const launcher = path.resolve(path.dirname(entry), '..', '..', 'bin', 'console-backend');
  const viaLauncher = fs.existsSync(launcher);
  const proc = spawn(viaLauncher ? 'sh' : process.execPath, viaLauncher ? [launcher, ...nodeArgs] : [...nodeArgs, entry], {
    env: {
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      HOST: '127.0.0.1',
      PORT: String(port),
      LOG_LEVEL: 'warn',
      ...(viaLauncher ? {} : { MALLOC_ARENA_MAX: '2' }),
      ...env,
      ...(JSON.parse(process.env.BENCH_SERVICE_ENV ?? '{}') as Record<string, string>),
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, '/api/health');
  return running(proc, url);
}

/** Starts a node script (with `nodeArgs` given to its node) that listens on `PORT` and answers `healthPath`. */
export async function startServer(script: string, healthPath: string, env: Record<string, string> = {}, nodeArgs: string[] = []): Promise<Running> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...nodeArgs, script], {
    env: { PATH: process.env.PATH ?? '', PORT: String(port), ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const url = `http://127.0.0.1:${port}`;
  await waitHealthy(url, proc, healthPath);
  return running(proc, url);
}

/** Runs a node script to completion; resolves with its stdout parsed as JSON (last line). */
export function runJson<T>(script: string, args: string[] = [], env: Record<string, string> = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, ...args], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
    proc.on('error', reject);
    proc.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}`));
      const last = out.trim().split('\n').at(-1) ?? '';
      try {
        resolve(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON result: ${out.slice(-300)}`));
      }
    });
  });
}

/** A node script that prints `ready` when set up, then one JSON result line at the end. */
export function startStaged<T>(script: string, args: string[] = [], env: Record<string, string> = {}): { ready: Promise<void>; result: Promise<T>; pid: number | undefined } {
  const proc = spawn(process.execPath, [script, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  let readyResolve!: () => void;
  const ready = new Promise<void>((r) => (readyResolve = r));
  proc.stdout.setEncoding('utf8').on('data', (c: string) => {
    out += c;
    if (out.startsWith('ready\n')) readyResolve();
  });
  const result = new Promise<T>((resolve, reject) => {
    proc.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${script} exited with ${code}`));
      try {
        resolve(JSON.parse(out.trim().split('\n').at(-1) ?? '') as T);
      } catch {
        reject(new Error(`${script} printed no JSON result`));
      }
    });
  });
  return { ready, result, pid: proc.pid };
}
