/** Process facts from `/proc`, read synchronously so a tree is captured before any of it is signalled; only in the process worker. */
import fs from 'node:fs';

/** One process as `/proc/<pid>/stat` shows it (a plain object: it crosses threads). */
export interface ProcInfo {
  readonly pid: number;
  readonly ppid: number;
  readonly pgid: number;
  /** Session id: the pid of the session's leader (a process leaves its session only by starting one of its own). */
  readonly sid: number;
  /** One-letter state: R, S, D, Z (zombie), T… */
  readonly state: string;
  /** Start time in clock ticks since boot: with the pid, identifies a process (no reuse). */
  readonly startTime: number;
}

/** Whether this machine has Linux `/proc` (elsewhere tree-kill's `ps` walk stands in). */
export const HAS_PROC = fs.existsSync('/proc/self/stat');

/** One buffer for every `/proc` read: `readFileSync` allocates 64 KB per call there (sizes read as 0), garbage per scan. */
let scratch = Buffer.allocUnsafe(64 * 1024);

function readProcFile(file: string): number {
  let fd: number;
  try {
    fd = fs.openSync(file, 'r');
  } catch {
    return -1;
  }
  try {
    let len = 0;
    for (;;) {
      if (len === scratch.length) {
        const bigger = Buffer.allocUnsafe(scratch.length * 2);
        scratch.copy(bigger, 0, 0, len);
        scratch = bigger;
      }
      const n = fs.readSync(fd, scratch, len, scratch.length - len, null);
      if (n === 0) return len;
      len += n;
    }
  } catch {
    return -1; // the process went away while it was read
  } finally {
    fs.closeSync(fd);
  }
}

/** Parses `/proc/<pid>/stat`; null when the process does not exist. */
export function readProc(pid: number): ProcInfo | null {
  const len = readProcFile(`/proc/${pid}/stat`);
  if (len < 0) return null;
  const text = scratch.toString('latin1', 0, len);
  // The command name (field 2) is in parentheses and may hold spaces: parse after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  return {
    pid,
    state: rest[0] ?? '?',
    ppid: Number(rest[1]),
    pgid: Number(rest[2]),
    sid: Number(rest[3]),
    startTime: Number(rest[19]),
  };
}

/** Every process visible in `/proc`. */
export function listProcs(): ProcInfo[] {
  if (!HAS_PROC) return [];
  const out: ProcInfo[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (name.charCodeAt(0) < 48 || name.charCodeAt(0) > 57) continue;
    const p = readProc(Number(name));
    if (p) out.push(p);
  }
  return out;
}

/** Whether `pid`'s initial environment holds exactly `entry` (`NAME=value`); false when unreadable (gone, or not ours). */
export function hasEnvEntry(pid: number, entry: string): boolean {
  return hasEnvNeedle(pid, Buffer.from(`${entry}\0`));
}

function hasEnvNeedle(pid: number, needle: Buffer): boolean {
  const len = readProcFile(`/proc/${pid}/environ`);
  if (len < 0) return false;
  const env = scratch.subarray(0, len);
  // Entries are NUL-terminated: match a whole entry, not a prefix or suffix of another.
  for (let at = env.indexOf(needle); at !== -1; at = env.indexOf(needle, at + 1)) {
    if (at === 0 || env[at - 1] === 0) return true;
  }
  return false;
}

/** This process's session: never taken as a tree's (a job that shared it would take the service with it). */
let ownSession: number | undefined;

/**
 * The live processes of a tree (TreeTarget): `root`'s descendants, group `pgid`, and holders of `mark`
 * with theirs, since a double fork or a dead parent leaves no other link. A pid is taken for the
 * leader, and mark holders searched, only from `notBefore`: nothing of the tree is older. No zombies.
 *
 * Also every process (from `notBefore`) in a session of one found, or in `sessions` (those of
 * processes found by earlier passes, alive or not): a session is left only by starting one, so its
 * members are the tree's. This finds an orphan whose mark cannot be read: between `execve` replacing
 * its memory and the new program's environment being laid out, `/proc/<pid>/environ` reads empty,
 * and a forker SIGKILLed just after a fork leaves its child in that state with no parent link.
 * The service's own session is never taken, nor one whose leader is alive and not of the tree: the
 * spawn helper's, which every job shares (each in a process group of its own) so that the jobs are one
 * autogroup (spawn-helper-main.ts); its members are other jobs.
 */
export function treeProcesses(root: number | null, pgid: number | null, mark?: string, notBefore?: number, sessions: readonly number[] = []): ProcInfo[] {
  const all = listProcs();
  ownSession ??= readProc(process.pid)?.sid ?? -1;
  const children = new Map<number, ProcInfo[]>();
  const members = new Map<number, ProcInfo[]>();
  const recent = (p: ProcInfo) => p.state !== 'Z' && p.pid !== process.pid && (notBefore === undefined || p.startTime >= notBefore);
  for (const p of all) {
    const list = children.get(p.ppid);
    if (list) list.push(p);
    else children.set(p.ppid, [p]);
    if (p.sid <= 0 || p.sid === ownSession || !recent(p)) continue;
    const session = members.get(p.sid);
    if (session) session.push(p);
    else members.set(p.sid, [p]);
  }
  const found = new Map<number, ProcInfo>();
  const rootInfo = root === null ? undefined : all.find((p) => p.pid === root && (notBefore === undefined || p.startTime === notBefore));
  const queue = rootInfo ? [rootInfo] : [];
  if (pgid !== null) for (const p of all) if (p.pgid === pgid) queue.push(p);
  if (mark !== undefined) {
    const needle = Buffer.from(`${mark}\0`);
    for (const p of all) if (recent(p) && hasEnvNeedle(p.pid, needle)) queue.push(p);
  }
  const leaders = new Map<number, ProcInfo>();
  for (const p of all) if (p.state !== 'Z') leaders.set(p.pid, p);
  const taken = new Set<number>();
  const seen = new Set<number>(sessions);
  const drain = () => {
    while (queue.length > 0) {
      const p = queue.pop() as ProcInfo;
      if (found.has(p.pid)) continue;
      found.set(p.pid, p);
      for (const c of children.get(p.pid) ?? []) queue.push(c);
      seen.add(p.sid);
    }
  };
  drain();
  // A session is taken once its leader is found, or is gone; until then it may be found later (a tree's member).
  for (let more = true; more; ) {
    more = false;
    for (const sid of seen) {
      if (taken.has(sid) || (leaders.has(sid) && !found.has(sid))) continue;
      taken.add(sid);
      for (const p of members.get(sid) ?? []) queue.push(p);
      more = true;
    }
    drain();
  }
  return [...found.values()].filter((p) => p.state !== 'Z');
}

/** True when `pid` is still the process captured in `info` (same start time, not a zombie). */
export function isSameProcess(info: ProcInfo): boolean {
  const now = readProc(info.pid);
  return now !== null && now.startTime === info.startTime && now.state !== 'Z';
}

/** The command line of `pid` (its arguments), or null when it cannot be read. */
export function readCmdline(pid: number): string[] | null {
  const len = readProcFile(`/proc/${pid}/cmdline`);
  if (len < 0) return null;
  const args = scratch.toString('utf8', 0, len).split('\0');
  if (args.at(-1) === '') args.pop(); // each argument ends with a NUL
  return args;
}

/** System boot time in ms since the epoch, or null when unknown. */
export function bootTimeMs(): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : null;
  } catch {
    return null;
  }
}
