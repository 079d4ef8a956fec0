/** Managed child processes: spawn detached, report the exit, stop the tree with a grace, sweep leftovers. */
export { spawnManaged, spawnManagedVia, ManagedProcess, type ManagedSpawnOptions, type ProcessEnd } from './managed-process.js';
export { ProcessSpawnError, type ProcessErrorCode } from './errors.js';
export { lowerPriority, type PriorityOutcome } from './lower-priority.js';
export { exitFactsOf, type ExitFacts } from './exit-facts.js';
export { HousekeepingThread } from './housekeeping-thread.js';
export { sweepTree, describeLeftovers, type SweepBounds, type SweepReport } from './sweep-tree.js';
export type { ProcInfo, TreeTarget, DescribeResult } from './proc-task.js';
export { SpawnHelper, type RemoteChild, type RemoteSpawn, type SpawnHelperStats } from './spawn-helper.js';
