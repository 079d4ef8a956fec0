// What every state back end is (sqlite-backend.ts, postgres-backend.ts) and what both share.
import type { Bus } from '../bus/bus-api.js';
import type { StorageStateListener } from '../bus/storage-outage.js';
import type { StateCommitter } from '../console/index.js';
import type { ServiceMetrics } from '../metrics/index.js';
import type { HousekeepingThread } from '../process/index.js';
import type { Db } from '../state/sqlite/db.js';
import type { PgStateStore } from '../state/pg/pg-state-store.js';
import type { StateStore } from '../state/state-store.js';
import type { Logger } from '../ops/logger.js';
import type { ReadinessCheck } from '../ops/readiness.js';

/** The instance id of the embedded SQLite database's one instance. */
export const LOCAL_INSTANCE_ID = 'local';

/** The channel a console write notifies once committed: the instances read their mirrors again. */
export const CONSOLE_CHANNEL = 'console_state';

/** One back end's state store, bus and committer, built together because each back end needs its own of all three. */
export interface StateBackend {
  readonly kind: 'sqlite' | 'postgres';
  readonly store: StateStore;
  readonly bus: Bus;
  readonly committer: StateCommitter;
  /** The SQLite database (null in cluster mode). */
  readonly db: Db | null;
  /** The readiness check of the state database. */
  readiness(): ReadinessCheck | Promise<ReadinessCheck>;
  /** The system status's `database`. */
  status(): Record<string, unknown>;
  /** Runs `fn` when console state may have changed on another instance (cluster mode only). */
  onConsoleChanged(fn: () => void): void;
  /** The PostgreSQL store, for what only cluster mode does (instances, cancels); null on SQLite. */
  readonly shared: PgStateStore | null;
  /** Subscribes to a cluster channel (cluster mode only; a no-op on SQLite). Call before {@link start}. */
  listen(channel: string, fn: (payload: string) => void): void;
  /** Starts listening to the other instances (cluster mode); on SQLite, opens the replay thread's connection. */
  start(): Promise<void>;
  /** Closes the database (after the bus closed). */
  close(): Promise<void>;
}

/** What the back end reports to the service, and what it may use of it. */
export interface BackendHooks {
  readonly metrics: ServiceMetrics;
  readonly log: Logger;
  /** This instance's id (cluster mode). */
  readonly instanceId: string;
  /** The housekeeping thread (the process worker's): SQLite's WAL checkpoints run on it. Close it after the back end. */
  readonly housekeeping: Pick<HousekeepingThread, 'runTask'>;
  /** Told when a part the back end cannot work without died (logged already): the service stops. */
  readonly onFatal: (err: Error) => void;
}

/** The log lines of a bus that cannot store its events (a full disk; the database away). */
export function storageStateLogger(log: Logger, where: Record<string, unknown>): StorageStateListener {
  return (state, outage) =>
    state === 'recovered'
      ? log.warn({ outage, ...where }, 'state database stores events again')
      : log.error(
          { outage, ...where },
          state === 'failing' ? 'state database cannot store events: they are held in memory and retried' : 'events not stored at shutdown: the state database refused them',
        );
}
