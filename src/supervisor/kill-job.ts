/**
 * Killing a job's whole process tree. Each job runs in its own process group (it is spawned
 * detached, so it leads a new session), and a signal to the group reaches every member,
 * even those whose parent already exited. Descendants that moved to a group of their own are
 * found by parent links, captured synchronously from /proc *before* anything is signalled,
 * and remembered so the SIGKILL after the grace period still reaches them once their parent
 * is gone. Descendants that left the group *and* lost their parent (a double fork, or a
 * parent that exited first) are found by the environment entry every process of the job
 * inherits (the supervisor's `CONSOLE_JOB_ID=<proposal id>`). Where /proc is missing,
 * tree-kill walks the tree with `ps` instead.
 */
import treeKill from 'tree-kill';
import { HAS_PROC, isSameProcess, jobProcesses, type ProcInfo } from './proc.js';

/**
 * Sends `signal` to the process group led by `pgid`.
 * @returns false when no such group exists any more (ESRCH).
 */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

/** True while any process of the group led by `pgid` is alive. */
export function groupAlive(pgid: number): boolean {
  return signalGroup(pgid, 0 as unknown as NodeJS.Signals);
}

/** The processes of one job seen so far; grows with every kill pass. */
export type KnownTree = Map<number, ProcInfo>;

/**
 * Signals the job's group and every process of its tree, known or newly found. Never throws.
 * @param known processes captured by earlier passes (updated in place).
 * @param mark the environment entry (`NAME=value`) the job was started with: processes that
 *   hold it are the job's wherever they went (see {@link jobProcesses}).
 * @param notBefore the leader's start time (clock ticks since boot): older processes are not
 *   searched for the mark.
 * @returns the number of live processes of the job signalled (0 without /proc).
 */
export function killJobTree(pid: number, signal: NodeJS.Signals, known: KnownTree = new Map(), mark?: string, notBefore?: number): number {
  if (!HAS_PROC) {
    treeKill(pid, signal, () => {
      // The leader may already be gone; tree-kill reports that as an error we do not need.
    });
    safely(() => signalGroup(pid, signal));
    return 0;
  }
  for (const p of jobProcesses(pid, mark, false, notBefore)) known.set(p.pid, p);
  return signalAll(pid, signal, known);
}

/**
 * What is left of a job whose leader already ended: signals the group `pgid` (null: none of
 * its own, e.g. a reused pid), the processes captured by earlier passes, and every process
 * holding `mark` with its descendants. The leader's pid itself is not followed (it may have
 * been reused). `notBefore` as for {@link killJobTree}. Never throws.
 * @returns the number of live processes of the job signalled (0 without /proc).
 */
export function killLeftovers(pgid: number | null, signal: NodeJS.Signals, known: KnownTree, mark: string, notBefore?: number): number {
  if (!HAS_PROC) {
    if (pgid !== null) safely(() => signalGroup(pgid, signal));
    return 0;
  }
  for (const p of jobProcesses(pgid, mark, true, notBefore)) known.set(p.pid, p);
  return signalAll(pgid, signal, known);
}

/** Signals the group and every known process that is still the one captured; counts the latter. */
function signalAll(pgid: number | null, signal: NodeJS.Signals, known: KnownTree): number {
  if (pgid !== null) safely(() => signalGroup(pgid, signal));
  let signalled = 0;
  for (const p of known.values()) {
    // A pid captured earlier is signalled only while it is still that same process; the
    // leader was signalled with its group.
    if (!isSameProcess(p)) continue;
    if (p.pid === pgid || safely(() => process.kill(p.pid, signal))) signalled++;
  }
  return signalled;
}

/** Runs `fn`; false when it threw. */
function safely(fn: () => unknown): boolean {
  try {
    fn();
    return true;
  } catch {
    // ESRCH: already gone; EPERM: not ours any more. Nothing to do either way.
    return false;
  }
}
