// The PostgreSQL back end (cluster.md): the shared database, the cluster bus, LISTEN/NOTIFY to wake it
// and to tell of console changes. Loaded only in cluster mode, so SQLite instances never pay for `pg` (~15 MB).
import { ClusterBus } from '../bus/cluster-bus.js';
import { WORKSPACE_REPORTS_KEPT } from '../console/index.js';
import { PgAppendThread } from '../state/pg/append-thread.js';
import { PgCommitter } from '../state/pg/committer.js';
import { EVENTS_CHANNEL } from '../state/pg/event-repo.js';
import { PgListener } from '../state/pg/listener.js';
import { describeDatabaseUrl, openPgStateStore, sessionBoundsFor, type PgStateStore } from '../state/pg/pg-state-store.js';
import type { Config } from '../config/config.js';
import { WORKER_FILES } from '../config/paths.js';
import { outageCheck, type ReadinessCheck } from '../ops/readiness.js';
import { CONSOLE_CHANNEL, storageStateLogger, type BackendHooks, type StateBackend } from './backend.js';

/** Opens the shared PostgreSQL back end at `url` (CONSOLE_DATABASE_URL). @throws StateDbError naming the database. */
export async function openPostgresBackend(config: Config, url: string, { metrics, log, instanceId, onFatal }: BackendHooks): Promise<StateBackend> {
  const sessionBounds = sessionBoundsFor(config.cluster.instanceTimeoutMs);
  const store = await openPgStateStore({
    url,
    connectTimeoutMs: config.cluster.connectTimeoutMs,
    eventRetention: config.events.retention,
    clicksPerProject: config.consoleState.clicksPerProject,
    clicksMaxTotal: config.consoleState.clicksMaxTotal,
    workspaceReportsKept: WORKSPACE_REPORTS_KEPT,
    sessionBounds,
    onPoolError: (err) => log.warn({ err: err.message }, 'a pooled connection to the state database failed: it is replaced'),
  });
  const where = { database: describeDatabaseUrl(url) };
  let bus: ClusterBus;
  let appender: PgAppendThread | undefined;
  try {
    // The bus's appends run on a thread of their own; its death is fatal: the events queued could no longer be stored.
    appender = new PgAppendThread(
      WORKER_FILES.pgAppend,
      { url, connectTimeoutMs: config.cluster.connectTimeoutMs, sessionBounds, retention: config.events.retention, nice: config.events.appendThreadNice },
      store.events,
      (err) => {
        log.fatal({ err: err.message, stack: err.stack }, 'the event append thread died: events can no longer be stored; the service stops');
        onFatal(err);
      },
      config.threads.answerLimitMs,
    );
    bus = await ClusterBus.open(appender, {
      maxUnstored: config.cluster.heldEventsMax,
      retryMs: 1000,
      pollMs: 1000,
      onCount: metrics.countEvent,
      onStorageState: storageStateLogger(log, where),
    });
  } catch (err) {
    await appender?.close();
    await store.close();
    throw err;
  }
  const eventWriter = appender;
  const consoleListeners: (() => void)[] = [];
  const consoleChanged = () => {
    for (const fn of consoleListeners) fn();
  };
  const channels: Record<string, (payload: string) => void> = { [EVENTS_CHANNEL]: () => bus.wake(), [CONSOLE_CHANNEL]: consoleChanged };
  const listener = new PgListener({
    url,
    channels,
    // Notifications sent while it was down are lost: what they would have said is read now.
    onConnected: () => {
      bus.wake();
      consoleChanged();
    },
    onLost: (err) => log.warn({ err: err.message, ...where }, 'the connection listening for other instances was lost: it is opened again (the bus reads the log every second meanwhile)'),
  });
  const committer = new PgCommitter(store, bus, () => {
    store.notify(CONSOLE_CHANNEL, instanceId).catch(() => {});
  });
  return {
    kind: 'postgres',
    store,
    bus,
    committer,
    db: null,
    shared: store,
    readiness: async () => outageCheck(bus) ?? (await pingCheck(store, where.database)),
    status: () => ({ backend: 'postgres', url: where.database, listening: listener.connected, sessionBounds: store.sessionBounds, eventWriter: eventWriter.stats() }),
    onConsoleChanged: (fn) => void consoleListeners.push(fn),
    listen: (channel, fn) => {
      channels[channel] = fn;
    },
    start: async () => {
      await Promise.race([eventWriter.ready, eventWriter.ended]);
      await listener.start();
    },
    close: async () => {
      await listener.close();
      await eventWriter.close();
      await store.close();
    },
  };
}

async function pingCheck(store: PgStateStore, where: string): Promise<ReadinessCheck> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      store.ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no answer within 2000 ms')), 2000);
      }),
    ]);
    return { name: 'stateDatabase', ok: true, detail: `${where} answers` };
  } catch (err) {
    return { name: 'stateDatabase', ok: false, detail: `${where} cannot be reached: ${(err as Error).message}` };
  } finally {
    clearTimeout(timer);
  }
}
