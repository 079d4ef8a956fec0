/** Process-worker tasks and results: plain serialisable objects, so `/proc` scans run off the main thread. */
import type { ProcInfo } from './proc-scan.js';

export type { ProcInfo } from './proc-scan.js';

/**
 * What leads to a tree's processes (see `treeProcesses`): `root` null once reaped, `pgid` null when
 * not the tree's; `notBefore` the leader's start in ticks since boot; `known` from earlier passes.
 */
export interface TreeTarget {
  readonly root: number | null;
  readonly pgid: number | null;
  readonly mark?: string;
  readonly notBefore?: number;
  readonly known: readonly ProcInfo[];
}

/** One kill pass, captured and signalled in one go (a parent killed first would orphan unseen children). */
export interface TreePassTask extends TreeTarget {
  readonly kind: 'tree-pass';
  readonly signal: NodeJS.Signals;
}

/** `procAvailable` false without `/proc` (nothing done); `known`: the tree alive just before the signals. */
export interface TreePassResult {
  readonly procAvailable: boolean;
  readonly known: ProcInfo[];
}

export interface DescribeTask {
  readonly kind: 'describe';
  readonly pid: number;
}

export interface DescribeResult {
  readonly info: ProcInfo | null;
  readonly cmdline: string[] | null;
}

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
