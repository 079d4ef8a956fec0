/** Process-worker tasks and results: plain serialisable objects, so `/proc` scans run off the main thread. */
import type { ProcInfo } from './proc-scan.js';

export type { ProcInfo } from './proc-scan.js';

/**
 * What leads to a tree's processes (see `treeProcesses`): `root` null once reaped, `pgid` null when
 * not the tree's; `notBefore` the leader's start in ticks since boot; `known` from earlier passes.
 */
export interface TreeTarget {
  /** The leader, whose descendants are followed by parent links; null once it was reaped. */
  readonly root: number | null;
  /** The process group signalled as a whole; null when it is not (or no longer) the tree's. */
  readonly pgid: number | null;
  /** The environment entry `NAME=value` every process of the tree inherited. */
  readonly mark?: string;
  /** The leader's start time: older processes are not searched for the mark. */
  readonly notBefore?: number;
  /** Processes captured by earlier passes, signalled while each is still the same process. */
  readonly known: readonly ProcInfo[];
}

/** One kill pass, captured and signalled in one go (a parent killed first would orphan unseen children). */
export interface TreePassTask extends TreeTarget {
  readonly kind: 'tree-pass';
  readonly signal: NodeJS.Signals;
}

/** `procAvailable` false without `/proc` (nothing done); `known`: the tree alive just before the signals. */
export interface TreePassResult {
  /** False where `/proc` is missing: nothing was captured nor signalled. */
  readonly procAvailable: boolean;
  /** The tree's processes alive when captured, just before the signals (to pass on as `known`). */
  readonly known: ProcInfo[];
}

/** One process's stat and command line (null when gone or unreadable). */
export interface DescribeTask {
  readonly kind: 'describe';
  readonly pid: number;
}

export interface DescribeResult {
  readonly info: ProcInfo | null;
  readonly cmdline: string[] | null;
}

/** The system's boot time in ms since the epoch (null when unknown). */
export interface BootTimeTask {
  readonly kind: 'boot-time';
}

/** Sets `pid`'s autogroup nice: `set`, `again` (rate-limited), `refused` (gone, not ours), `none` (no autogroup). */
export interface GroupNiceTask {
  readonly kind: 'group-nice';
  readonly pid: number;
  readonly nice: number;
}

export type GroupNiceResult = 'set' | 'again' | 'refused' | 'none';

export type ProcTask = TreePassTask | DescribeTask | BootTimeTask | GroupNiceTask;
