/**
 * The process worker: every synchronous `/proc` read, and the signals that must follow a
 * capture at once, run here, on a thread of their own, so a scan of a big tree never holds
 * the service's event loop (issue 10, item 5). One function of a serialisable task
 * (style.md, practice 7); run from the compiled `dist/process/proc-worker.js`.
 */
import { bootTimeMs, HAS_PROC, isSameProcess, readCmdline, readProc, treeProcesses, type ProcInfo } from './proc-scan.js';
import type { DescribeResult, ProcTask, TreePassResult, TreePassTask } from './proc-task.js';

export default function runProcTask(task: ProcTask): TreePassResult | DescribeResult | number | null {
  switch (task.kind) {
    case 'tree-pass':
      return treePass(task);
    case 'describe':
      return { info: readProc(task.pid), cmdline: readCmdline(task.pid) };
    case 'boot-time':
      return bootTimeMs();
  }
}

/** Captures the tree, then signals its group and each of its live processes. Never throws. */
function treePass(t: TreePassTask): TreePassResult {
  if (!HAS_PROC) return { procAvailable: false, known: [...t.known] };
  const captured = new Map<number, ProcInfo>();
  for (const p of t.known) captured.set(p.pid, p);
  for (const p of treeProcesses(t.root, t.pgid, t.mark, t.notBefore)) captured.set(p.pid, p);
  if (t.pgid !== null) send(-t.pgid, t.signal);
  const live: ProcInfo[] = [];
  for (const p of captured.values()) {
    // A pid captured earlier is signalled only while it is still that same process; one that
    // ended is dropped (it never comes back). The leader was signalled with its group.
    if (!isSameProcess(p)) continue;
    if (p.pid === t.pgid || send(p.pid, t.signal)) live.push(p);
  }
  return { procAvailable: true, known: live };
}

/** `kill(target, signal)`; false when it failed (ESRCH: gone; EPERM: not ours any more). */
function send(target: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch {
    return false;
  }
}
