/**
 * The service's side of its spawn helper process (spawn-helper-main.ts): start it, order spawns,
 * connect each job's stdout and stderr, and learn each job's exit. Forks happen there, never here.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { ProcessSpawnError } from './errors.js';
import type { BirthPriority } from './group-nice.js';
import type { FromHelper, JobSessions, SpawnOrder } from './spawn-helper-protocol.js';

/** A process the helper started: its pid, our ends of its output, and its exit. */
export interface RemoteChild {
  readonly pid: number;
  /** Its start time (clock ticks after boot), read before it could be reaped; null without `/proc`. */
  readonly startTime: number | null;
  /** What setting the order's nice value did, right after its exec (null when none was asked for). */
  readonly lowered: BirthPriority | null;
  readonly stdout: net.Socket | null;
  readonly stderr: net.Socket | null;
  /** Resolves at its exit with Node's pair: a code, or the signal that ended it. */
  readonly exit: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>;
}

/** The helper's figures for `GET /api/system-status` (`jobs.spawner`). */
export interface SpawnHelperStats {
  /** Its process id; null once it is gone. */
  readonly pid: number | null;
  /** Processes it started, and spawns refused (by the OS, or for want of descriptors here). */
  readonly spawned: number;
  readonly refused: number;
  /** Processes it started whose exit has not come yet. */
  readonly running: number;
  /** How its jobs are grouped for the scheduler (spawn-helper-protocol.ts JobSessions); null before it is ready. */
  readonly sessions: JobSessions | null;
}

/** What to start, as spawn-helper-protocol.ts's order without its id. */
export type RemoteSpawn = Omit<SpawnOrder, 'kind' | 'id'>;

type Waiter = {
  spawned: (m: Extract<FromHelper, { kind: 'spawned' | 'refused' }>) => void;
  exited?: (m: { code: number | null; signal: NodeJS.Signals | null }) => void;
  started?: boolean;
};

/**
 * One spawn helper process. Its death while the service runs is reported once to `onDeath` (the
 * exits of its jobs cannot be learnt any more).
 */
export class SpawnHelper {
  private readonly child: ChildProcess;
  private readonly socket: Promise<string>;
  private readonly waiters = new Map<string, Waiter>();
  private closing = false;
  private gone: Error | null = null;
  /** How its jobs are grouped for the scheduler, told when it is ready. */
  sessions: JobSessions | null = null;
  private spawned = 0;
  private refused = 0;
  /** Resolves when the helper process exited (or could not start). */
  readonly exited: Promise<void>;

  /**
   * Starts the helper (`file`: the compiled spawn-helper-main.js) as the leader of a session of its own, which its
   * jobs share (spawn-helper-main.ts); `perl`: the program that starts each job in a process group of its own there
   * (default: the first of /usr/bin/perl, /bin/perl, /usr/local/bin/perl; without one each job leads its own session).
   * @throws Error when the file does not exist (not built).
   */
  constructor(file: string, onDeath: (err: Error) => void, options: { readonly perl?: string } = {}) {
    if (!fs.existsSync(file)) throw new Error(`spawn helper not found: ${file} (run npm run build)`);
    // Its own flags only (a debugger or loader of the service is not its business), and none of
    // the service's environment (its secrets): each job's environment comes with its order.
    // Detached: the session (and so the autogroup) its jobs share is its own, not the service's.
    const args = options.perl === undefined ? [] : [`--perl=${options.perl}`];
    this.child = fork(file, args, { detached: true, execArgv: [], env: { TMPDIR: os.tmpdir() }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let ready!: (socket: string) => void;
    let failed!: (err: Error) => void;
    this.socket = new Promise((resolve, reject) => {
      ready = resolve;
      failed = reject;
    });
    this.socket.catch(() => {});
    this.child.on('message', (m: FromHelper) => {
      if (m.kind !== 'ready') return this.deliver(m);
      this.sessions = m.sessions;
      ready(m.socket);
    });
    let ended!: () => void;
    this.exited = new Promise((resolve) => (ended = resolve));
    const end = (reason: string) => {
      if (this.gone !== null) return;
      const gone = new Error(`the spawn helper process ${this.child.pid ?? '(not started)'} ended (${reason})`);
      this.gone = gone;
      failed(gone);
      for (const w of this.waiters.values()) w.spawned({ kind: 'refused', id: '', code: null, message: gone.message });
      this.waiters.clear();
      if (!this.closing) onDeath(gone);
      ended();
    };
    this.child.once('exit', (code, signal) => end(signal ?? `code ${code}`));
    // A send to a closed channel (its exit follows), or a fork the OS refused (no exit follows).
    this.child.on('error', (err: NodeJS.ErrnoException) => {
      if (this.child.pid === undefined) end(`not started: ${err.code ?? err.message}`);
    });
  }

  /** Resolves once it listens, with how its jobs are grouped (null when it could not start). Never rejects. */
  whenReady(): Promise<JobSessions | null> {
    return this.socket.then(
      () => this.sessions,
      () => null,
    );
  }

  /** The helper's pid (it is every job's parent). */
  get pid(): number | undefined {
    return this.child.pid;
  }

  /** Its pid and what it did since it started. */
  stats(): SpawnHelperStats {
    let running = 0;
    for (const w of this.waiters.values()) if (w.started) running++;
    return { pid: this.gone === null ? (this.child.pid ?? null) : null, spawned: this.spawned, refused: this.refused, running, sessions: this.sessions };
  }

  /**
   * Starts `order.file` in the helper, its piped streams connected here before it runs.
   * @throws ProcessSpawnError when the OS refuses (the errno known), the descriptors of the streams
   *   cannot be made here (EMFILE…), or the helper is gone.
   */
  async spawn(order: RemoteSpawn): Promise<RemoteChild> {
    try {
      const child = await this.order(order);
      this.spawned++;
      return child;
    } catch (err) {
      this.refused++;
      throw err;
    }
  }

  private async order(order: RemoteSpawn): Promise<RemoteChild> {
    const id = randomBytes(8).toString('hex');
    const path = await this.socket.catch(() => {
      throw new ProcessSpawnError(order.file, this.gone ?? new Error('the spawn helper did not start'));
    });
    const made = await Promise.allSettled([order.stdout ? connect(path, `${id}o`) : null, order.stderr ? connect(path, `${id}e`) : null]);
    const [stdout = null, stderr = null] = made.map((m) => (m.status === 'fulfilled' ? m.value : null));
    const refused = made.find((m) => m.status === 'rejected');
    if (refused !== undefined) {
      stdout?.destroy();
      stderr?.destroy();
      throw new ProcessSpawnError(order.file, refused.reason as Error);
    }
    let exited!: (m: { code: number | null; signal: NodeJS.Signals | null }) => void;
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => (exited = resolve));
    const reply = new Promise<Extract<FromHelper, { kind: 'spawned' | 'refused' }>>((resolve) => this.waiters.set(id, { spawned: resolve, exited }));
    if (this.gone !== null || !this.child.connected) {
      this.waiters.delete(id);
      stdout?.destroy();
      stderr?.destroy();
      throw new ProcessSpawnError(order.file, this.gone ?? new Error('the spawn helper is closed'));
    }
    this.child.send({ kind: 'spawn', id, ...order } satisfies SpawnOrder);
    const m = await reply;
    if (m.kind === 'refused') {
      this.waiters.delete(id);
      stdout?.destroy();
      stderr?.destroy();
      const err: NodeJS.ErrnoException = new Error(m.message);
      if (m.code !== null) err.code = m.code;
      throw new ProcessSpawnError(order.file, err);
    }
    return { pid: m.pid, startTime: m.startTime, lowered: m.lowered, stdout, stderr, exit };
  }

  /** Lets the helper go (its channel closed) and waits for its exit. Jobs still running keep running. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.child.connected) this.child.disconnect();
    await this.exited;
  }

  private deliver(m: FromHelper): void {
    if (m.kind === 'ready') return;
    const w = this.waiters.get(m.id);
    if (w === undefined) return;
    if (m.kind === 'exit') {
      this.waiters.delete(m.id);
      w.exited?.({ code: m.code, signal: m.signal });
    } else {
      w.started = m.kind === 'spawned';
      w.spawned(m);
    }
  }
}

/** One stdio connection to the helper, its tag written. @throws the connection's error (EMFILE, ENOENT…). */
function connect(path: string, tag: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    // Read from its creation, and kept (nothing here discards a socket's unread bytes). Ended
    // from here only after it saw EOF, that is once every holder of the job's end closed it.
    const socket = net.connect({ path });
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.removeListener('error', reject);
      // A reset before its reader is attached must not be an uncaught error; the reader sees the close.
      socket.on('error', () => {});
      socket.write(tag, 'latin1');
      resolve(socket);
    });
  });
}
