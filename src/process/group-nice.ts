/**
 * A process's nice value and its autogroup's, set synchronously: by the process worker (proc-worker.ts) and by
 * the spawn helper right after each job's exec, before the job is reported (spawn-helper-main.ts). Under autogroup
 * scheduling each job, the leader of its own session, is a scheduling group weighted as much as the whole service.
 */
import fs from 'node:fs';
import os from 'node:os';
import type { GroupNiceResult } from './proc-task.js';

/** What lowering a process at its start did: its nice value set, and its autogroup's (see {@link setGroupNice}). */
export interface BirthPriority {
  readonly process: boolean;
  readonly group: GroupNiceResult;
}

let autogroups: boolean | undefined;

/** Sets `pid`'s autogroup nice: `set`, `again` (the kernel's rate limit on unprivileged changes), `refused` (gone, not ours), `none` (no autogroups). */
export function setGroupNice(pid: number, nice: number): GroupNiceResult {
  if (autogroups === undefined) {
    try {
      autogroups = fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
    } catch {
      autogroups = false;
    }
  }
  if (!autogroups) return 'none';
  try {
    fs.writeFileSync(`/proc/${pid}/autogroup`, String(nice));
    return 'set';
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EAGAIN' ? 'again' : 'refused';
  }
}

/** Sets `nice` (1..19) on `pid` and on its autogroup. Never throws. */
export function lowerNow(pid: number, nice: number): BirthPriority {
  return { process: setProcessNice(pid, nice), group: setGroupNice(pid, nice) };
}

/** Sets `nice` on `pid` (not its autogroup). @returns whether it was set. Never throws. */
export function setProcessNice(pid: number, nice: number): boolean {
  try {
    os.setPriority(pid, nice);
    return true;
  } catch {
    return false;
  }
}
