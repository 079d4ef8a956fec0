/**
 * The spawn helper: a small process that makes the forks of the jobs, so the service's own large
 * process is never forked (a fork copies the page tables of the whole process and stalls its
 * threads; bench/RESULTS.md, "where a job's spawn should run"). Run from dist/ with an IPC channel.
 *
 * A job's stdout and stderr are unix-socket connections the service opens to this helper's
 * server: the helper hands its accepted ends to the job and closes them, and the service reads its
 * own ends. The helper only ever reads the tag the service wrote first (the other direction of
 * the job's output), so nothing the job prints passes through here or can be lost here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { lowerNow } from './group-nice.js';
import { readProc } from './proc-scan.js';
import { TAG_BYTES, type FromHelper, type SpawnOrder, type ToHelper } from './spawn-helper-protocol.js';

/** Ms an order waits for its stdio connections (or they for their order) before it is refused: both come from this
 * machine at once, so only a lost one waits this long; 10 s was not enough on a machine loaded far past its cores
 * (the test suite beside CPU-bound processes refused a few of 64 spawns at once). */
const PAIRING_MS = 60_000;

interface Pending {
  order?: SpawnOrder;
  stdout?: net.Socket;
  stderr?: net.Socket;
  timer: NodeJS.Timeout;
}

/** Tells the service; nothing once its channel closed (it ended or let this helper go: `disconnect` below exits). A
 * send to a closed channel would end this process on an unhandled error, leaving its temp folder behind: a send
 * that fails as the channel closes is dropped the same way (its callback takes the error). */
const send = (m: FromHelper): void => {
  if (process.connected) process.send?.(m, undefined, undefined, () => {});
};
const pending = new Map<string, Pending>();

function pendingOf(id: string): Pending {
  let p = pending.get(id);
  if (p === undefined) {
    const entry: Pending = { timer: setTimeout(() => giveUp(id), PAIRING_MS) };
    pending.set(id, entry);
    p = entry;
  }
  return p;
}

function giveUp(id: string): void {
  const p = pending.get(id);
  pending.delete(id);
  p?.stdout?.destroy();
  p?.stderr?.destroy();
  if (p?.order) send({ kind: 'refused', id, code: null, message: 'the stdio connections of the spawn did not arrive' });
}

/** Spawns once the order and each stream it asks for are here. */
function tryStart(id: string): void {
  const p = pending.get(id);
  if (p?.order === undefined || (p.order.stdout && p.stdout === undefined) || (p.order.stderr && p.stderr === undefined)) return;
  pending.delete(id);
  clearTimeout(p.timer);
  start(p.order, p.stdout, p.stderr);
}

function start(order: SpawnOrder, stdout: net.Socket | undefined, stderr: net.Socket | undefined): void {
  const { id } = order;
  let child: ChildProcess;
  try {
    child = spawn(order.file, order.args, {
      cwd: order.cwd,
      env: order.env,
      detached: true, // its own process group (and session)
      stdio: ['ignore', stdout ?? 'ignore', stderr ?? 'ignore'],
      shell: false,
    });
  } catch (err) {
    send({ kind: 'refused', id, code: errnoOf(err), message: (err as Error).message });
    return;
  } finally {
    // Closed, never ended: an end would shut the shared socket down for the job too.
    stdout?.destroy();
    stderr?.destroy();
  }
  const pid = child.pid;
  if (pid === undefined) {
    // ENOENT, EACCES, EAGAIN, EMFILE arrive as a next-tick `error` event.
    let told = false;
    const refuse = (err: Error | undefined) => {
      if (told) return;
      told = true;
      send({ kind: 'refused', id, code: errnoOf(err), message: err?.message ?? 'spawn refused' });
    };
    child.once('error', refuse);
    setImmediate(() => refuse(undefined));
    return;
  }
  child.on('error', () => {});
  // Read before this loop can reap it: until then the pid is its own.
  const startTime = readProc(pid)?.startTime ?? null;
  // Lowered here, microseconds after its exec: reported later, it would run at its autogroup's full weight (as
  // much as the whole service's) until the service's lowering came, and 64 jobs started at once take the CPU.
  const lowered = order.nice !== undefined && order.nice > 0 ? lowerNow(pid, order.nice) : null;
  send({ kind: 'spawned', id, pid, startTime, lowered });
  child.once('exit', (code, signal) => send({ kind: 'exit', id, code, signal }));
}

function errnoOf(err: unknown): string | null {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : null;
}

/** Reads a connection's tag, then files it under its order; anything else closes it. */
function accept(socket: net.Socket): void {
  let tag = '';
  socket.setEncoding('latin1');
  socket.on('error', () => {});
  const onData = (chunk: string) => {
    tag += chunk;
    if (tag.length < TAG_BYTES) return;
    socket.removeListener('data', onData);
    socket.pause();
    const id = tag.slice(0, TAG_BYTES - 1);
    const stream = tag[TAG_BYTES - 1];
    if (tag.length !== TAG_BYTES || !/^[0-9a-f]{16}$/.test(id) || (stream !== 'o' && stream !== 'e')) {
      socket.destroy();
      return;
    }
    const p = pendingOf(id);
    const key = stream === 'o' ? 'stdout' : 'stderr';
    if (p[key] !== undefined) {
      socket.destroy();
      return;
    }
    p[key] = socket;
    tryStart(id);
  };
  socket.on('data', onData);
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-spawn-')); // mode 0700: only this user connects
const socketPath = path.join(dir, 's');
const server = net.createServer({ allowHalfOpen: true }, accept);
server.listen(socketPath, () => {
  // Let go before it listened (the 'disconnect' may have come before its listener below): leave now.
  if (!process.connected) return leave();
  send({ kind: 'ready', socket: socketPath });
});

process.on('message', (m: ToHelper) => {
  if (m?.kind !== 'spawn') return;
  pendingOf(m.id).order = m;
  tryStart(m.id);
});
// The service's signals are for the service: its shutdown drains the jobs through this helper.
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const) process.on(signal, () => {});
/** Its channel closed: the service ended (or let it go). The jobs are not this helper's to stop. */
function leave(): void {
  server.close();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
}
process.on('disconnect', leave);
