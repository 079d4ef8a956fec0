/**
 * The spawn helper: a small process that makes the forks of the jobs, so the service's own large
 * process is never forked (a fork copies the page tables of the whole process and stalls its
 * threads; bench/RESULTS.md, "where a job's spawn should run"). Run from dist/ with an IPC channel.
 *
 * A job's stdout and stderr are unix-socket connections the service opens to this helper's
 * server: the helper hands its accepted ends to the job and closes them, and the service reads its
 * own ends. The helper only ever reads the tag the service wrote first (the other direction of
 * the job's output), so nothing the job prints passes through here or can be lost here.
 *
 * The jobs share this helper's session, each leading a process group of its own. Under autogroup
 * scheduling every session is a scheduling group weighted as the whole service's: 64 jobs each
 * leading its own session (Node's `detached`) weighed 64 × 15 at nice 19, as much as the service's
 * 1024, and its main thread waited for a CPU while they started (bench/RESULTS.md, 2026-12-01).
 * Node cannot set a child's process group without a new session, so each job is started by perl's
 * `setpgrp` and `exec` (no shell; perl-base is part of every Debian and Ubuntu system): one autogroup
 * for every job, lowered once. Without perl, or when this helper does not lead its session, each job
 * leads a session of its own as before (`sessions` in `ready`, `jobs.spawner.sessions` of the status).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { lowerNow, setProcessNice, type BirthPriority } from './group-nice.js';
import { readProc } from './proc-scan.js';
import { PERL_PLACES, TAG_BYTES, type FromHelper, type JobSessions, type SpawnOrder, type ToHelper } from './spawn-helper-protocol.js';

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

/** `--perl=<path>` (spawn-helper.ts), else the first of the usual places; null when none is executable. */
function findPerl(): string | null {
  const given = process.argv.find((a) => a.startsWith('--perl='))?.slice('--perl='.length);
  for (const file of given !== undefined ? [given] : PERL_PLACES) {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {}
  }
  return null;
}

const PERL = findPerl();
/** Shared only when this helper leads its session (the service forks it detached). */
const SESSIONS: JobSessions = PERL !== null && readProc(process.pid)?.sid === process.pid ? 'shared' : 'one per job';
/**
 * A process group of its own, then the job's program in its place (the same pid); `--` ends perl's options.
 * First the job's own environment is set back (see {@link perlEnv}): the names in `CONSOLE_SPAWN_KEPT`
 * (`=`-separated, a character no name holds) from their copies `CONSOLE_SPAWN_KEPT_<i>`.
 */
const SETPGRP = [
  'delete $ENV{PERL_BADLANG}; my $i = 0;',
  'for my $name (split /=/, delete($ENV{CONSOLE_SPAWN_KEPT}) // "") { $ENV{$name} = delete $ENV{"CONSOLE_SPAWN_KEPT_" . $i++} }',
  'setpgrp(0, 0) or die "setpgrp: $!\\n"; exec { $ARGV[0] } @ARGV or die "exec $ARGV[0]: $!\\n"',
].join(' ');
/** The names perl itself reads at its start (`PERL5OPT`, `PERL5LIB`, `PERLIO`, `PERL_HASH_SEED_DEBUG`…) and this script's own. */
const PERL_READS = /^(PERL|CONSOLE_SPAWN_KEPT)/;

/**
 * The environment perl starts with: the job's, without the variables perl would act on (a `PERL5OPT` naming a
 * module not installed would fail every job; `PERL_HASH_SEED_DEBUG` would print on its stderr), kept as copies
 * that {@link SETPGRP} sets back before the exec; `PERL_BADLANG=0` keeps perl's warning about a locale not
 * installed (`LC_ALL`, `LANG`) off the job's stderr. The job gets exactly the environment of its order.
 */
function perlEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  const kept: string[] = [];
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (PERL_READS.test(name)) {
      out[`CONSOLE_SPAWN_KEPT_${kept.length}`] = value;
      kept.push(name);
    } else out[name] = value;
  }
  out.CONSOLE_SPAWN_KEPT = kept.join('=');
  out.PERL_BADLANG = '0';
  return out;
}
/** The shared autogroup's nice value once set: later jobs leave it (the kernel rate-limits changes to 10 a second). */
let groupNice: number | null = null;

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
  const stdio: ['ignore', net.Socket | 'ignore', net.Socket | 'ignore'] = ['ignore', stdout ?? 'ignore', stderr ?? 'ignore'];
  try {
    if (SESSIONS === 'shared') {
      // Refused here, as a spawn of the file itself would be: perl would start, then fail its exec.
      requireProgram(order.file, order.cwd, order.env.PATH);
      child = spawn(PERL as string, ['-e', SETPGRP, '--', order.file, ...order.args], { cwd: order.cwd, env: perlEnv(order.env), stdio, shell: false });
    } else {
      child = spawn(order.file, order.args, { cwd: order.cwd, env: order.env, detached: true, stdio, shell: false }); // its own process group (and session)
    }
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
  const lowered = order.nice !== undefined && order.nice > 0 ? lowerJob(pid, order.nice) : null;
  // Reported at once: until perl's setpgrp its group does not exist, and a signal to its tree reaches
  // the leader itself (proc-worker.ts); waiting for the group made each 202 wait for perl to get a CPU.
  send({ kind: 'spawned', id, pid, startTime, lowered });
  child.once('exit', (code, signal) => send({ kind: 'exit', id, code, signal }));
}

/**
 * Checks that `file` can be executed as a spawn would find it: a path (with a slash) from `cwd`, else the first match
 * on `PATH` (the job's, as Node's spawn searches it). @throws an errno error: ENOENT, or EACCES (not executable, a directory).
 */
function requireProgram(file: string, cwd: string | undefined, PATH = '/usr/local/bin:/usr/bin:/bin'): void {
  const candidates = file.includes('/') ? [path.resolve(cwd ?? process.cwd(), file)] : PATH.split(':').map((dir) => path.resolve(cwd ?? process.cwd(), dir || '.', file));
  let refusal: NodeJS.ErrnoException | null = null;
  for (const candidate of candidates) {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (!fs.statSync(candidate).isDirectory()) return;
      refusal = Object.assign(new Error(`spawn ${file} EACCES`), { code: 'EACCES', errno: -13, syscall: `spawn ${file}` });
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      // As execvp: a candidate found but not executable is remembered; a missing one is passed over.
      if (code === 'EACCES') refusal = Object.assign(new Error(`spawn ${file} EACCES`), { code, errno: -13, syscall: `spawn ${file}` });
    }
  }
  throw refusal ?? Object.assign(new Error(`spawn ${file} ENOENT`), { code: 'ENOENT', errno: -2, syscall: `spawn ${file}` });
}

/** Sets the job's nice value, and the autogroup's: its own, or the shared one the first time (and after a refusal). */
function lowerJob(pid: number, nice: number): BirthPriority {
  if (SESSIONS === 'shared' && groupNice === nice) return { process: setProcessNice(pid, nice), group: 'set' };
  const lowered = lowerNow(pid, nice);
  if (SESSIONS === 'shared' && (lowered.group === 'set' || lowered.group === 'none')) groupNice = nice;
  return lowered;
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
  send({ kind: 'ready', socket: socketPath, sessions: SESSIONS });
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
