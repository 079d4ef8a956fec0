/** The leftover sweep: SIGKILL and rescan until a scan finds none, since one pass can miss a process forked meanwhile. */
import type { ProcInfo, TreeTarget } from './proc-task.js';
import type { HousekeepingThread } from './housekeeping-thread.js';

/** How long a sweep keeps going: CONSOLE_SWEEP_MAX_PASSES, and CONSOLE_SWEEP_MAX_MS past which no pass starts. */
export interface SweepBounds {
  /** Most passes (scan, then SIGKILL) a sweep makes; 1 or more. */
  readonly maxPasses: number;
  /** Time after which no new pass starts, in ms. */
  readonly maxMs: number;
}

/** What a sweep did: distinct kills, passes, pids still found when a bound stopped it, ms; `scanned` false without `/proc`. */
export interface SweepReport {
  /** Distinct processes it SIGKILLed. */
  readonly killed: number;
  /** Passes made (the last one found nothing, unless `left` is not empty). */
  readonly passes: number;
  /** Pids the last pass still found (and SIGKILLed) when a bound stopped the sweep; empty when a scan found nothing. */
  readonly left: readonly number[];
  /** Time the sweep took, in ms. */
  readonly ms: number;
  /** False where `/proc` is missing: the group was signalled once, nothing was counted. */
  readonly scanned: boolean;
}

/** Pause when a pass found only already-killed processes: the kernel needs a moment to end them. */
const SETTLE_MS = 10;

/** SIGKILLs the tree until a pass finds none alive or a bound is reached. Never rejects. */
export async function sweepTree(table: HousekeepingThread, target: TreeTarget, bounds: SweepBounds): Promise<SweepReport> {
  const started = Date.now();
  const killed = new Set<string>(); // pid:startTime, so a reused pid counts as another process
  let known: readonly ProcInfo[] = target.known;
  for (let passes = 1; ; passes++) {
    const pass = await table.signalTree({ ...target, known }, 'SIGKILL');
    const ms = Date.now() - started;
    if (!pass.procAvailable) return { killed: 0, passes, left: [], ms, scanned: false };
    if (pass.known.length === 0) return { killed: killed.size, passes, left: [], ms, scanned: true };
    let fresh = 0;
    for (const p of pass.known) {
      const key = `${p.pid}:${p.startTime}`;
      if (!killed.has(key)) fresh++;
      killed.add(key);
    }
    if (passes >= bounds.maxPasses || ms >= bounds.maxMs) return { killed: killed.size, passes, left: pass.known.map((p) => p.pid), ms, scanned: true };
    known = pass.known;
    if (fresh === 0) await new Promise((r) => setTimeout(r, SETTLE_MS));
  }
}

/** An event detail for a sweep that a bound stopped: how many survived, after what, which (at most 20 pids). */
export function describeLeftovers(r: SweepReport): string {
  const n = r.left.length;
  return `${n} processes were still running after ${r.passes} kill passes in ${r.ms} ms (pids ${r.left.slice(0, 20).join(' ')}${n > 20 ? ' …' : ''})`;
}
