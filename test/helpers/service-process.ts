/**
 * The service as a separate process, from the compiled `dist/` (test/fixtures/gen-start-service.mjs,
 * as `npm start` runs it): for faults that end the process (start-up failures), and for
 * watching its file access with strace. Build first (`npm test` does).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import { listProcs } from '../../src/process/proc-scan.js';
import { waitFor } from './events.js';
import { TEST_SERVICE_ENV } from './ceilings.js';
import { fixture, recordingEnv } from './service.js';
import { answersFor, exitWithOutput, freePort, type ServiceProcess as BaseServiceProcess } from './process.js';

export interface ServiceProcess extends BaseServiceProcess {
  /** The pid of the service itself (a wrapper such as strace runs it as its child). */
  servicePid(): number;
  /** SIGTERM to the service, then waits for the exit (SIGKILL after `ceilingMs`). */
  stop(ceilingMs?: number): Promise<[number | null, NodeJS.Signals | null]>;
}

export interface SpawnOptions {
  /** Environment of the service (PATH, HOST, PORT and LOG_LEVEL are set unless given). */
  readonly env: Record<string, string>;
  /** Words put before `node <fixture>`: e.g. `['strace', …]` or `['setpriv', …]`. */
  readonly wrapper?: readonly string[];
}

/** Whether something accepts TCP connections on 127.0.0.1:`port`. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.destroy();
      resolve(true);
    });
    sock.on('error', () => resolve(false));
  });
}

function launch(port: number, opts: SpawnOptions): ServiceProcess {
  const argv = [...(opts.wrapper ?? []), process.execPath, fixture('gen-start-service.mjs')];
  const child = spawn(argv[0] as string, argv.slice(1), {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', LOG_LEVEL: 'silent', CONSOLE_WORKER_THREADS: '1', ...recordingEnv(), ...TEST_SERVICE_ENV, ...opts.env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  let out = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = exitWithOutput(child);
  const url = `http://127.0.0.1:${port}`;
  return {
    child,
    url,
    port,
    exited,
    stderr: () => err,
    stdout: () => out,
    servicePid: () => servicePid(child.pid as number),
    stop: async (ceilingMs = 30_000) => {
      // The signal goes to the service: strace, sent a SIGTERM, would leave it running detached.
      if (child.exitCode === null && child.signalCode === null) process.kill(servicePid(child.pid as number), 'SIGTERM');
      const timer = setTimeout(() => {
        try {
          process.kill(servicePid(child.pid as number), 'SIGKILL');
        } catch {
          // gone already
        }
        child.kill('SIGKILL');
      }, ceilingMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

/** `pid` when it runs node, else its first child that does (the program a wrapper started). */
function servicePid(pid: number): number {
  const exe = (p: number) => {
    try {
      return fs.readlinkSync(`/proc/${p}/exe`);
    } catch {
      return '';
    }
  };
  if (exe(pid) === fs.realpathSync(process.execPath)) return pid;
  let children: string[] = [];
  try {
    children = fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/);
  } catch {
    return pid;
  }
  const node = children.map(Number).find((c) => exe(c) === fs.realpathSync(process.execPath));
  return node ?? pid;
}

/**
 * Starts the service and waits until it answers (a ceiling, not an assertion), checked to be
 * this service when `CONSOLE_STATE_DIR` is given.
 * A port taken between the probe and the listen makes the service exit: another is tried.
 * @throws when the process exits before answering (its stderr in the message).
 */
export async function startServiceProcess(opts: SpawnOptions): Promise<ServiceProcess> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    const p = launch(port, opts);
    let gone = false;
    void p.exited.then(() => (gone = true));
    const stateDir = opts.env.CONSOLE_STATE_DIR;
    const up = await waitFor(
      async () => {
        if (gone) return false;
        // Checked to be this service when its state folder is known (answersFor).
        if (stateDir !== undefined) return answersFor(p.url, stateDir, opts.env.CONSOLE_API_TOKEN, opts.env.CONSOLE_INSTANCE_ID);
        try {
          return (await fetch(`${p.url}/api/health`)).ok ? true : undefined;
        } catch {
          return undefined;
        }
      },
      'the service to answer',
      60_000,
    );
    if (up) return p;
    if (attempt >= 3 || !/EADDRINUSE/.test(p.stderr())) throw new Error(`the service exited before serving: ${p.stderr()}`);
  }
}

/**
 * Runs the service expecting a failed start-up: waits for its exit (a ceiling of
 * `ceilingMs`, after which it is killed and the test fails on the result).
 * @returns exit code, stderr, and whether the service (or a process under it) ever held a listening
 * socket on its port. Ownership is read from `/proc`, not from a connect: a port chosen free may be
 * taken by another test's process once the service is gone, and that is not the service serving.
 */
export async function failedStart(opts: SpawnOptions, ceilingMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string; listened: boolean }> {
  const port = await freePort();
  const p = launch(port, opts);
  const root = p.child.pid as number;
  let listened = false;
  let done = false;
  void p.exited.then(() => (done = true));
  // Probe the port while the process lives: a service that listened even briefly is caught.
  const probing = (async () => {
    while (!done) {
      if (holdsListener(root, port)) listened = true;
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const timer = setTimeout(() => p.child.kill('SIGKILL'), ceilingMs);
  const [code, signal] = await p.exited;
  clearTimeout(timer);
  await probing;
  return { code, signal, stderr: p.stderr(), listened };
}

/** Whether `root` or a process under it holds a TCP socket listening on `port` (IPv4 or IPv6, any address). */
export function holdsListener(root: number, port: number): boolean {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return false;
  const pids = new Set([root]);
  let grew = true;
  // Descendants: a wrapper (strace) runs the service as its child.
  while (grew) {
    grew = false;
    for (const p of listProcs()) {
      if (pids.has(p.ppid) && !pids.has(p.pid)) {
        pids.add(p.pid);
        grew = true;
      }
    }
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = fs.readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone
    }
    for (const fd of fds) {
      try {
        if (inodes.has(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))) return true;
      } catch {
        // closed meanwhile
      }
    }
  }
  return false;
}

/** `socket:[inode]` of every socket in state LISTEN (0A) on local `port`, from /proc/net/tcp and tcp6. */
function listeningInodes(port: number): Set<string> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found = new Set<string>();
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text = '';
    try {
      text = fs.readFileSync(table, 'utf8');
    } catch {
      continue; // no IPv6
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length > 9 && f[1]?.endsWith(`:${hexPort}`) && f[3] === '0A') found.add(`socket:[${f[9]}]`);
    }
  }
  return found;
}
