/**
 * Managed child processes (issue 11, item 1): the one place that spawns a detached child,
 * turns its exit into facts, stops its tree with a grace period, and sweeps what it left
 * running. Used by the generation supervisor and the terminal manager.
 */
export { spawnManaged, ManagedProcess, type ManagedSpawnOptions, type ProcessEnd } from './managed-process.js';
export { ProcessSpawnError, type ProcessErrorCode } from './errors.js';
export { lowerPriority, type PriorityOutcome } from './lower-priority.js';
export { exitFactsOf, type ExitFacts } from './exit-facts.js';
export { HousekeepingThread } from './housekeeping-thread.js';
export { sweepTree, describeLeftovers, type SweepBounds, type SweepReport } from './sweep-tree.js';
export type { ProcInfo, TreeTarget, DescribeResult } from './proc-task.js';
