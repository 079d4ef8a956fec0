/**
 * Lowers a child's CPU priority so the console stays fast during generation. Each session is its
 * own autogroup weighing as much as the service, so the autogroup's nice is set too (rate-limited: retried).
 */
import os from 'node:os';
import type { HousekeepingThread } from './housekeeping-thread.js';

export interface PriorityOutcome {
  readonly process: boolean;
  /** Its autogroup's nice value was set; null where there is no autogroup scheduling. */
  readonly group: boolean | null;
}

/** The kernel's rate limit on autogroup changes by unprivileged processes. */
const GROUP_RETRY_MS = 110;
/** Tries of a refused autogroup change: about 10 s, then given up. */
const GROUP_TRIES = 90;

/**
 * Sets `nice` (0..19) on process `pid` and its autogroup. Never throws; the outcome says what was set.
 * @param alive false once the process ended: no more group retries (its pid may be reused).
 * @param firstTry called when the first group try settled; spawn-pacer waits for it.
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
