/**
 * The state back end the service runs on (issue 13; shared/design/cluster.md, "Switching it
 * on"): the state store, the event bus and the committer of console writes, built together
 * because each back end needs its own of all three.
 *
 * - CONSOLE_DATABASE_URL unset: the embedded SQLite database of this instance, as always: the
 *   bus hands ids out itself and stores once per event-loop turn, console writes stage their
 *   events on it, and the housekeeping thread (the process worker's) checkpoints the WAL.
 * - Set: PostgreSQL shared by every instance: the cluster bus (ids from the database, delivery
 *   by reading the shared log), LISTEN/NOTIFY to wake it and to tell the instances that console
 *   state changed, and the readiness check asks the database.
 */
import { EventBus } from '../bus/bus.js';
import type { Bus } from '../bus/bus-api.js';
import type { StoreStateListener } from '../bus/store-outage.js';
import { SqliteCommitter, WORKSPACE_REPORTS_KEPT, type StateCommitter } from '../console/index.js';
import type { ServiceMetrics } from '../metrics/index.js';
import type { ProcTable } from '../process/index.js';
import { Checkpointer } from '../state/checkpointer.js';
import { openStateDb, type Db } from '../state/db.js';
import { EventLog } from '../state/event-log.js';
import type { PgStateStore } from '../state/pg/pg-state-store.js';
import { SqliteStateStore } from '../state/sqlite-state-store.js';
import type { StateStore } from '../state/state-store.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import { WORKER_FILES } from './paths.js';
import { checkSqlite, type ReadinessCheck } from './readiness.js';

/** The channel a console write notifies once committed: the instances read their mirrors again. */
export const CONSOLE_CHANNEL = 'console_state';

/** The instance id of the embedded SQLite database's one instance. */
export const LOCAL_INSTANCE_ID = 'local';

/** What the service runs on (see the module's comment). */
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
  /** Starts listening to the other instances (cluster mode; at once on SQLite). */
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
  readonly housekeeping: Pick<ProcTable, 'runTask'>;
}

/**
 * Opens the back end CONSOLE_DATABASE_URL selects.
 * @throws StateDbError naming the database (and CONSOLE_DATABASE_URL) when it cannot be opened.
 */
export function openStateBackend(config: Config, hooks: BackendHooks): Promise<StateBackend> {
  const url = config.cluster.databaseUrl;
  if (url === null) return Promise.resolve(openSqlite(config, hooks));
  // Loaded only in cluster mode: `pg` is no part of an instance on SQLite (shared-backend.ts).
  return import('./shared-backend.js').then(({ openShared }) => openShared(config, url, hooks));
}

/** The log lines of a bus that cannot store its events (a full disk; the database away). */
export function storeStateLogger(log: Logger, where: Record<string, unknown>): StoreStateListener {
  return (state, outage) =>
    state === 'recovered'
      ? log.warn({ outage, ...where }, 'state database stores events again')
      : log.error({ outage, ...where }, state === 'failing' ? 'state database cannot store events: they are held in memory and retried' : 'events not stored at shutdown: the state database refused them');
}

function openSqlite(config: Config, { metrics, log, housekeeping }: BackendHooks): StateBackend {
  const db = openStateDb(config.stateDbPath);
  try {
    // One event log: the bus's and the state store's ids come from it.
    const eventLog = new EventLog(db, config.events.retention);
    const bus = new EventBus(eventLog, { flushIntervalMs: config.events.flushIntervalMs, onCount: metrics.countEvent, onStoreState: storeStateLogger(log, { stateDb: config.stateDbPath }) });
    const store = new SqliteStateStore(db, {
      instanceId: LOCAL_INSTANCE_ID,
      eventRetention: config.events.retention,
      clicksPerProject: config.consoleState.clicksPerProject,
      clicksMaxTotal: config.consoleState.clicksMaxTotal,
      workspaceReportsKept: WORKSPACE_REPORTS_KEPT,
      eventLog,
    });
    const checkpointer = new Checkpointer(config.stateDbPath, (task) => housekeeping.runTask(WORKER_FILES.checkpoint, task));
    return {
      kind: 'sqlite',
      store,
      bus,
      committer: new SqliteCommitter(store, bus),
      db,
      shared: null,
      readiness: () => checkSqlite(db, bus),
      status: () => ({ backend: 'sqlite', file: config.stateDbPath, checkpointFailures: checkpointer.failures }),
      onConsoleChanged: () => {},
      listen: () => {},
      start: async () => {},
      close: async () => {
        await checkpointer.stop(); // its connection closes first: the main one checkpoints on close
        db.close();
      },
    };
  } catch (err) {
    db.close();
    throw err;
  }
}
