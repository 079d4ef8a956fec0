/**
 * Tasks of the process worker (`proc-worker.ts`) and their results: plain, serialisable
 * objects (style.md, practice 7), so every `/proc` scan runs off the main thread.
 */
import type { ProcInfo } from './proc-scan.js';

export type { ProcInfo } from './proc-scan.js';

/**
 * Where a process tree is: what leads to its processes in `/proc` (see `treeProcesses`).
 * Pids are those of this machine; `notBefore` is in clock ticks since boot.
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

/**
 * One kill pass: capture the tree, then signal the group and every captured process, in one
 * go on the worker (a parent killed first would orphan its children before they were seen).
 */
export interface TreePassTask extends TreeTarget {
  readonly kind: 'tree-pass';
  readonly signal: NodeJS.Signals;
}

/** What a pass saw. */
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

/**
 * Sets the nice value of `pid`'s autogroup (issue 12; src/process/lower-priority.ts). The
 * result: `set`; `again` when the kernel's rate limit refused it (try later); `refused` (gone,
 * not ours); `none` where the kernel does not schedule by autogroup.
 */
export interface GroupNiceTask {
  readonly kind: 'group-nice';
  readonly pid: number;
  readonly nice: number;
}

export type GroupNiceResult = 'set' | 'again' | 'refused' | 'none';

export type ProcTask = TreePassTask | DescribeTask | BootTimeTask | GroupNiceTask;
