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
import { SqliteCommitter, WORKSPACE_REPORTS_KEPT } from '../console/index.js';
import { Checkpointer } from '../state/checkpointer.js';
import { openStateDb } from '../state/db.js';
import { SQLITE_BINDING } from '../state/sqlite/binding.js';
import { EventLog } from '../state/event-log.js';
import { SqliteStateStore } from '../state/sqlite-state-store.js';
import { storeStateLogger, type BackendHooks, type StateBackend } from './backend.js';
import type { Config } from './config.js';
import { WORKER_FILES } from './paths.js';
import { checkSqlite } from './readiness.js';

/** The instance id of the embedded SQLite database's one instance. */
export const LOCAL_INSTANCE_ID = 'local';

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
      status: () => ({ backend: 'sqlite', file: config.stateDbPath, binding: SQLITE_BINDING, checkpointFailures: checkpointer.failures }),
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
