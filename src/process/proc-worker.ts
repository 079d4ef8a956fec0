/** The process worker: synchronous `/proc` reads and the signals that follow a capture, on their own thread (run from dist/). */
import { bootTimeMs, HAS_PROC, isSameProcess, readCmdline, readProc, treeProcesses, type ProcInfo } from './proc-scan.js';
import { setGroupNice } from './group-nice.js';
import type { DescribeResult, GroupNiceResult, ProcTask, TreePassResult, TreePassTask } from './proc-task.js';

export default function runProcTask(task: ProcTask): TreePassResult | DescribeResult | GroupNiceResult | number | null {
  switch (task.kind) {
    case 'tree-pass':
      return treePass(task);
    case 'describe':
      return { info: readProc(task.pid), cmdline: readCmdline(task.pid) };
    case 'boot-time':
      return bootTimeMs();
    case 'group-nice':
      return setGroupNice(task.pid, task.nice);
  }
}

/** Captures the tree, then signals its group and each of its live processes. Never throws. */
function treePass(t: TreePassTask): TreePassResult {
  if (!HAS_PROC) return { procAvailable: false, known: [...t.known] };
  const live = new Map<number, ProcInfo>();
  const sessions = t.known.map((p) => p.sid);
  for (const p of treeProcesses(t.root, t.pgid, t.mark, t.notBefore, sessions)) live.set(p.pid, p);
  // A pid captured earlier is taken only while still the same process; one that ended never returns.
  for (const p of t.known) if (!live.has(p.pid) && isSameProcess(p)) live.set(p.pid, p);
  // All captured before the first signal: its children are not re-parented unseen. A leader whose
  // group does not exist yet (a job the spawn helper started, before perl's setpgrp) is signalled itself.
  const grouped = t.pgid !== null && send(-t.pgid, t.signal);
  for (const p of live.values()) if (p.pid !== t.pgid || !grouped) send(p.pid, t.signal);
  return { procAvailable: true, known: [...live.values()] };
}

/** `kill(target, signal)`; a failure means it is gone (ESRCH) or not ours any more (EPERM). @returns whether it was sent. */
function send(target: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(target, signal);
    return true;
  } catch {
    return false;
  }
}
