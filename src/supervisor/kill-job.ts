/**
 * Killing a job's whole process tree. Each job runs in its own process group (it is spawned
 * detached, so it leads a new session), and a signal to the group reaches every member,
 * even those whose parent already exited. tree-kill additionally follows parent links, for
 * descendants that moved to a group of their own.
 */
import treeKill from 'tree-kill';

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

/** Signals the group and every descendant of `pid` found by tree-kill. Never throws. */
export function killJobTree(pid: number, signal: NodeJS.Signals): void {
  try {
    signalGroup(pid, signal);
  } catch {
    // EPERM: not ours any more; nothing to do.
  }
  treeKill(pid, signal, () => {
    // The leader may already be gone; tree-kill reports that as an error we do not need.
  });
}
