/**
 * Killing a job's whole process tree. Each job runs in its own process group (it is spawned
 * detached, so it leads a new session), and a signal to the group reaches every member,
 * even those whose parent already exited. Descendants that moved to a group of their own are
 * found by parent links, captured synchronously from /proc *before* anything is signalled,
 * and remembered so the SIGKILL after the grace period still reaches them once their parent
 * is gone. Where /proc is missing, tree-kill walks the tree with `ps` instead.
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
 */
export function killJobTree(pid: number, signal: NodeJS.Signals, known: KnownTree = new Map()): void {
  if (!HAS_PROC) {
    treeKill(pid, signal, () => {
      // The leader may already be gone; tree-kill reports that as an error we do not need.
    });
    safely(() => signalGroup(pid, signal));
    return;
  }
  for (const p of jobProcesses(pid)) known.set(p.pid, p);
  safely(() => signalGroup(pid, signal));
  for (const p of known.values()) {
    // A pid captured earlier is signalled only while it is still that same process.
    if (p.pid !== pid && isSameProcess(p)) safely(() => process.kill(p.pid, signal));
  }
}

function safely(fn: () => unknown): void {
  try {
    fn();
  } catch {
    // ESRCH: already gone; EPERM: not ours any more. Nothing to do either way.
  }
}
