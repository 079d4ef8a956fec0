/** Lowers a child's CPU priority so the console stays fast during generation: the process, and its autogroup, which weighs as much as the service's. */
import os from 'node:os';
import type { HousekeepingThread } from './housekeeping-thread.js';

/** What lowering one process's priority did. */
export interface PriorityOutcome {
  /** Its nice value was set. */
  readonly process: boolean;
  /** Its autogroup's nice value was set; null where there is no autogroup scheduling. */
  readonly group: boolean | null;
}

/** The kernel's rate limit on unprivileged autogroup changes, and tries of a refused one (about 10 s). */
const GROUP_RETRY_MS = 110;
const GROUP_TRIES = 90;

/**
 * Sets `nice` (0..19) on `pid` and its autogroup; never throws. Group retries stop once `alive()`
 * is false (its pid may be reused).
 */
export async function lowerPriority(table: HousekeepingThread, pid: number, nice: number, alive: () => boolean = () => true): Promise<PriorityOutcome> {
  if (nice === 0) {
    return { process: false, group: null };
  }
  let process = false;
  try {
    os.setPriority(pid, nice);
    process = true;
  } catch {}
  for (let attempt = 1; ; attempt++) {
    const r = await table.groupNice(pid, nice);
    if (r === 'none') return { process, group: null };
    if (r !== 'again') return { process, group: r === 'set' };
    if (attempt >= GROUP_TRIES) return { process, group: false };
    await new Promise((resolve) => setTimeout(resolve, GROUP_RETRY_MS).unref());
    if (!alive()) return { process, group: false };
  }
}
