/**
 * A child's CPU priority lowered below the service's (issue 12, P7: the console stays fast
 * while generation floods it). Two settings, since Linux schedules in two levels:
 *
 * - the process's nice value (setpriority(2), `os.setPriority`), inherited by what it starts;
 * - with autogroup scheduling (`/proc/sys/kernel/sched_autogroup_enabled`), every session is a
 *   scheduling group of its own, weighted as much as the whole service's, and a nice value
 *   only orders processes inside their group. A managed process starts a new session (it is
 *   the leader of its own process group), so 64 jobs were 64 groups against the service's
 *   one: the service's main thread got a 65th of the CPU. The group's nice value is set
 *   through `/proc/<pid>/autogroup`, on the process worker (no `/proc` file is opened on the
 *   main thread); the kernel takes one such change per 100 ms from an unprivileged process,
 *   so a refused one is tried again until it is taken or the process is gone.
 */
import os from 'node:os';
import type { HousekeepingThread } from './housekeeping-thread.js';

/** What lowering one process's priority did. */
export interface PriorityOutcome {
  /** Its nice value was set. */
  readonly process: boolean;
  /** Its autogroup's nice value was set; null where there is no autogroup scheduling. */
  readonly group: boolean | null;
}

/** The kernel's rate limit on autogroup changes by unprivileged processes. */
const GROUP_RETRY_MS = 110;
/** Tries of a refused autogroup change: about 10 s, then given up. */
const GROUP_TRIES = 90;

/**
 * Sets the nice value of process `pid` and, under autogroup scheduling, of its autogroup, to
 * `nice` (0 changes nothing). Never throws: a process gone meanwhile, or a system that refuses,
 * leaves it as it was (the outcome says so).
 * @param nice 0..19 (19 is the lowest priority).
 * @param alive false once the process ended: a refused group change is not tried again then
 *   (its pid may be another process's later).
 * @param firstTry called once, when the first try of the group change has settled (at once
 *   for nice 0): what a caller holding back the next spawn waits for (supervisor/spawn-pacer).
 * @returns once both are settled (the group's after its retries).
 */
export async function lowerPriority(
  table: HousekeepingThread,
  pid: number,
  nice: number,
  alive: () => boolean = () => true,
  firstTry: () => void = () => {},
): Promise<PriorityOutcome> {
  if (nice === 0) {
    firstTry();
    return { process: false, group: null };
  }
  let process = false;
  try {
    os.setPriority(pid, nice);
    process = true;
  } catch {
    // Gone already, or not ours to change.
  }
  for (let attempt = 1; ; attempt++) {
    const r = await table.groupNice(pid, nice);
    if (attempt === 1) firstTry();
    if (r === 'none') return { process, group: null };
    if (r !== 'again') return { process, group: r === 'set' };
    if (attempt >= GROUP_TRIES) return { process, group: false };
    await new Promise((resolve) => setTimeout(resolve, GROUP_RETRY_MS).unref());
    if (!alive()) return { process, group: false };
  }
}
