// What cluster mode adds to the composition root (cluster.md): store revalidation, takes other instances'
// jobs wrote, cancels and terminal stops routed to their owner, terminals recorded for every instance.
import { RoutedCancels, type JobCanceller } from '../cluster/cancel-routing.js';
import { ClusterTerminals } from '../cluster/terminals.js';
import { StoreRevalidator } from '../engine/revalidator.js';
import type { EngineStore } from '../engine/store.js';
import { JOB_ENDED_CHANNEL, parseJobEnded } from '../state/pg/job-repos.js';
import type { PgStateStore } from '../state/pg/pg-state-store.js';
import type { Supervisor } from '../supervisor/index.js';
import type { TerminalInfo, TerminalManager, Terminals } from '../terminals/index.js';
import type { Config } from '../config/config.js';
import type { Logger } from '../ops/logger.js';
import type { StateBackend } from './backend.js';

/** The parts of one instance that cluster mode wires to the others. */
export interface ClusterParts {
  readonly shared: PgStateStore;
  readonly backend: StateBackend;
  readonly config: Config;
  readonly instanceId: string;
  readonly store: EngineStore;
  readonly supervisor: Supervisor;
  readonly terminals: TerminalManager;
  readonly log: Logger;
}

/** What the routes use instead of the instance's own, and what stops at shutdown. */
export interface ClusterWiring {
  readonly cancels: JobCanceller;
  readonly terminals: Terminals;
  /** Records a terminal of this instance for every instance (TerminalManagerOptions.onRecord). */
  readonly recordTerminal: (t: TerminalInfo) => void;
  stop(): void;
}

/** Wires an instance to the others. Call before {@link StateBackend.start}: it registers the channels listened on. */
export function wireCluster(p: ClusterParts): ClusterWiring {
  const notify = (channel: string, payload: string) => p.shared.notify(channel, payload);
  // Edits to the shared folder made on other machines raise no notification here.
  const revalidator = new StoreRevalidator(p.config.dataDir, p.config.cluster.storeRevalidateMs, (c) => p.store.changed(c));
  revalidator.start();
  // On a network share this instance's watcher misses what another's job wrote: re-read when that job ends.
  p.backend.listen(JOB_ENDED_CHANNEL, (payload) => {
    const ended = parseJobEnded(payload);
    if (ended && ended.instanceId !== p.instanceId) p.store.invalidateProject(ended.projectId);
  });
  const cancels = new RoutedCancels(p.supervisor, p.backend.store, p.instanceId, notify);
  const terminals = new ClusterTerminals(p.terminals, p.backend.store, {
    self: p.instanceId,
    notify,
    storeRoot: p.config.dataDir,
    command: p.config.terminals.command,
    onRecordFailed: (err) => p.log.warn({ err: (err as Error).message }, 'a terminal record was not written: the state database refused'),
  });
  for (const requests of [cancels.requests, terminals.requests]) {
    for (const [channel, fn] of Object.entries(requests.channels())) p.backend.listen(channel, fn);
  }
  return {
    cancels,
    terminals,
    recordTerminal: (t) => terminals.record(t),
    stop: () => revalidator.stop(),
  };
}
