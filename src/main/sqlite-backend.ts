// The embedded SQLite back end (CONSOLE_DATABASE_URL unset; cluster.md, "Switching it on"); the
// housekeeping thread checkpoints its WAL.
import { EventBus } from '../bus/bus.js';
import { WORKSPACE_REPORTS_KEPT } from '../console/index.js';
import { SqliteCommitter } from '../state/sqlite/committer.js';
import { Checkpointer } from '../state/sqlite/checkpointer.js';
import { openStateDb, type Db } from '../state/sqlite/db.js';
import { SQLITE_BINDING } from '../state/sqlite/binding.js';
import { EventLog } from '../state/sqlite/event-log.js';
import { EventWriter } from '../state/sqlite/event-writer.js';
import { ReplayThread } from '../state/sqlite/replay-thread.js';
import { SqliteStateStore } from '../state/sqlite/sqlite-state-store.js';
import { LOCAL_INSTANCE_ID, storageStateLogger, type BackendHooks, type StateBackend } from './backend.js';
import type { Config } from '../config/config.js';
import { WORKER_FILES } from '../config/paths.js';
import { outageCheck, type EventStorage, type ReadinessCheck } from '../ops/readiness.js';

/** Opens the SQLite state database at CONSOLE_STATE_DIR with its bus and committer. @throws StateDbError naming the file. */
export function openSqliteBackend(config: Config, { metrics, log, housekeeping, onFatal }: BackendHooks): StateBackend {
  const db = openStateDb(config.stateDbPath);
  let replayThread: ReplayThread | undefined;
  let writer: EventWriter | undefined;
  try {
    const eventLog = new EventLog(db, config.events.retention);
    // Its death is fatal: the events queued could no longer be stored.
    writer = new EventWriter(
      WORKER_FILES.eventWriter,
      { file: config.stateDbPath, nice: config.events.writerThreadNice },
      (err) => {
        log.fatal({ err: err.message, stack: err.stack }, 'the event writer thread died: events can no longer be stored; the service stops');
        onFatal(err);
      },
      config.threads.answerLimitMs,
    );
    eventLog.attachWriter(writer);
    const eventWriter = writer;
    const replay = new ReplayThread(
      WORKER_FILES.replay,
      config.stateDbPath,
      (sinceId, upTo) => eventLog.segmentTables(sinceId, upTo),
      (err) => log.warn({ err: err.message }, 'a stream replay read was made on the main thread: the replay thread failed'),
      config.sse.replayThreadNice,
      config.threads.answerLimitMs,
    );
    replayThread = replay;
    const bus = new EventBus(eventLog, {
      flushIntervalMs: config.events.flushIntervalMs,
      onCount: metrics.countEvent,
      onStorageState: storageStateLogger(log, { stateDb: config.stateDbPath }),
      readFrameBlock: replay.read,
    });
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
      readiness: () => checkSqlite(db, bus, eventLog),
      status: () => ({
        backend: 'sqlite',
        file: config.stateDbPath,
        binding: SQLITE_BINDING,
        checkpointFailures: checkpointer.failures,
        replayThread: replay.stats(),
        eventWriter: eventWriter.stats(),
      }),
      onConsoleChanged: () => {},
      listen: () => {},
      start: async () => {
        await Promise.race([eventWriter.ready, eventWriter.ended]);
        await replay.open();
      },
      close: async () => {
        await eventWriter.close();
        await replay.close();
        await checkpointer.stop(); // its connection closes first: the main one checkpoints on close
        db.close();
      },
    };
  } catch (err) {
    void writer?.close();
    void replayThread?.close();
    db.close();
    throw err;
  }
}

/**
 * Readiness (`stateDatabase`, GET /api/ready): events are stored, and the write lock is taken without waiting
 * (`BEGIN IMMEDIATE`, `ROLLBACK`), so a poll never holds the event loop. A console write's transaction open on this
 * connection (it spans awaits) holds the lock: it is writing, and its transaction is left alone.
 */
export function checkSqlite(db: Db, bus: EventStorage, log: EventLog): ReadinessCheck {
  const outage = outageCheck(bus);
  if (outage) return outage;
  if (!db.open) return { name: 'stateDatabase', ok: false, detail: `${db.name} is closed` };
  // The writer thread holds the lock now: it is writing (a failure would show as the outage above).
  if (log.appending) return { name: 'stateDatabase', ok: true, detail: `${db.name} takes writes (the event writer thread is writing)` };
  // Never BEGIN (refused) then ROLLBACK inside it: that would undo a console write under way.
  if (db.inTransaction) return { name: 'stateDatabase', ok: true, detail: `${db.name} takes writes (a console write is under way)` };
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  try {
    db.pragma('busy_timeout = 0');
    db.exec('BEGIN IMMEDIATE');
    db.exec('ROLLBACK');
    return { name: 'stateDatabase', ok: true, detail: `${db.name} takes writes` };
  } catch (err) {
    if (db.inTransaction) db.exec('ROLLBACK');
    return { name: 'stateDatabase', ok: false, detail: `${db.name} cannot be written now: ${(err as Error).message}` };
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}
