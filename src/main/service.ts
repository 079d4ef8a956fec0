/**
 * The composition root (style.md, practice 2): builds the state database, bus, supervisor,
 * worker pool and engine store, hands them to `createApp`, listens, and owns shutdown.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { EventBus } from '../bus/bus.js';
import { ConsoleState, SqliteCommitter, WORKSPACE_REPORTS_KEPT } from '../console/index.js';
import type { TakeFile } from '../console/take-states.js';
import { SseHub } from '../bus/sse.js';
import { storeAccess } from '../engine/read-store-file.js';
import { EngineStore } from '../engine/store.js';
import { createApp } from '../http/app.js';
import { isLoopbackHost } from '../http/auth.js';
import { answerClientError } from '../http/client-error.js';
import { ShutdownGate, stopListening } from '../http/shutdown-gate.js';
import type { Api } from '../http/route.js';
import { WriteProxy } from '../http/write-proxy.js';
import type { AppDeps } from '../http/routes/deps.js';
import { ServiceMetrics } from '../metrics/index.js';
import { SHIPPED_REGISTRIES, type Registries } from '../registry/index.js';
import { Checkpointer } from '../state/checkpointer.js';
import { openStateDb, type Db } from '../state/db.js';
import { EventLog } from '../state/event-log.js';
import { SqliteStateStore } from '../state/sqlite-state-store.js';
import { ProcTable } from '../process/index.js';
import { Supervisor } from '../supervisor/index.js';
import { TerminalManager } from '../terminals/index.js';
import { SynthesisPool } from '../workers/pool.js';
import { WORKER_FILES } from './paths.js';
import { APP_VERSION, ConfigError, type Config } from './config.js';
import { checkStartupGuards, utcDate } from './guards.js';
import { createLogger, type Logger } from './logger.js';
import { Readiness } from './readiness.js';

export interface ServiceOptions {
  /** Registries checked by the start-up guards; tests inject their own. */
  readonly registries?: Registries;
  /** Today's date (`YYYY-MM-DD`, UTC) for the guards; tests inject it. */
  readonly today?: string;
  /** A logger of the caller's, used as it is (no scrubbing but its own); else the service's (logger.ts). */
  readonly logger?: Logger;
}

/** A running service. `close` performs the full shutdown and resolves when it is done. */
export interface Service {
  readonly url: string;
  readonly port: number;
  readonly server: http.Server;
  readonly deps: AppDeps;
  /** Every declared route (`api.routes`), as served and documented. */
  readonly api: Api;
  readonly db: Db;
  close(): Promise<void>;
}

/**
 * Starts the service: guards first (nothing is opened or served when they fail), then the
 * state, the engine store and the HTTP server.
 * @throws StartupGuardError, ConfigError (CONSOLE_DATA_DIR not a folder), StateDbError, or a
 *   listen error (EADDRINUSE…).
 */
export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = opts.logger ?? createLogger(config.logLevel, { secrets: [config.apiToken], format: config.logFormat });
  const guards = checkStartupGuards(opts.registries ?? SHIPPED_REGISTRIES, opts.today ?? utcDate());

  if (config.sampleSeedDir !== null && !fs.existsSync(config.dataDir)) {
    // The bundled store is copied once into the state folder, so generated takes and media
    // never land in the repository.
    fs.cpSync(config.sampleSeedDir, config.dataDir, { recursive: true });
    log.info({ from: config.sampleSeedDir, to: config.dataDir }, 'sample engine store copied');
  }
  // A store that is not there is a mistake in the configuration, not an empty store (issue 14, item 3).
  checkStoreRoot(config.dataDir);
  // The service can serve without its tool, but every generation request would be a 500: said now.
  if (!isFile(config.dispatchCli)) {
    log.warn({ dispatchCli: config.dispatchCli }, `the dispatch tool ${config.dispatchCli} (DISPATCH_CLI) does not exist: generation requests answer 500 until it does (npm run build makes the default one)`);
  }

  const db = openStateDb(config.stateDbPath);
  const cleanup: (() => unknown)[] = [() => db.close()];
  const checkpointer = new Checkpointer(config.stateDbPath, WORKER_FILES.checkpoint);
  cleanup.unshift(() => checkpointer.stop());
  try {
    // Made first, so the counters start with the start-up recovery.
    const metrics = new ServiceMetrics();
    // One event log: the bus's and the state store's ids come from it.
    const eventLog = new EventLog(db, config.events.retention);
    const bus = new EventBus(eventLog, {
      onCount: metrics.countEvent,
      // While the state database refuses events (disk full…), they are held and retried: the
      // log is where an operator sees it happen.
      onStoreState: (state, outage) =>
        state === 'recovered'
          ? log.warn({ outage, stateDb: config.stateDbPath }, 'state database stores events again')
          : log.error({ outage, stateDb: config.stateDbPath }, state === 'failing' ? 'state database cannot store events: they are held in memory and retried' : 'events not stored at shutdown: the state database refused them'),
    });
    // One worker thread scans /proc and signals the trees of jobs and terminals, off the loop.
    // The worker threads are made first: they load their modules while the rest is built, and
    // the recoveries below wait for them side by side, not one after the other.
    const procs = new ProcTable(WORKER_FILES.proc);
    cleanup.unshift(() => procs.close());
    const pool = new SynthesisPool(config.workers.threads, WORKER_FILES, {
      timeoutMs: config.store.readTimeoutMs,
      retryAfterSeconds: config.jobs.retryAfterSeconds,
    });
    cleanup.unshift(() => pool.close(config.jobs.killGraceMs));
    const sweep = { maxPasses: config.processes.sweepMaxPasses, maxMs: config.processes.sweepMaxMs };
    const stateStore = new SqliteStateStore(db, {
      instanceId: INSTANCE_ID,
      eventRetention: config.events.retention,
      clicksPerProject: config.consoleState.clicksPerProject,
      clicksMaxTotal: config.consoleState.clicksMaxTotal,
      workspaceReportsKept: WORKSPACE_REPORTS_KEPT,
      eventLog,
    });
    const supervisor = new Supervisor(bus, stateStore, procs, {
      instanceId: INSTANCE_ID,
      dispatchCli: config.dispatchCli,
      childEnv: config.childEnv,
      maxRunning: config.jobs.maxRunning,
      retryAfterSeconds: config.jobs.retryAfterSeconds,
      killGraceMs: config.jobs.killGraceMs,
      lineMaxBytes: config.jobs.lineMaxBytes,
      historySize: config.jobs.historySize,
      sweep,
      nice: config.jobs.nice,
      backlogMax: config.events.backlogMax,
    });
    metrics.observeSupervisor(supervisor);
    const recovering = supervisor.recoverLost();
    // Settled here too, so a failure of the store's start-up does not leave it unhandled.
    recovering.catch(() => {});
    // Every read of the store goes through its real root, resolved once here (issue 10, item 4).
    const access = storeAccess(config.dataDir, config.store);
    // The console's recorded take states and memory toggles feed the engine store's answers;
    // take actions read their take file through the store (`store` is set before any request).
    const consoleState = await ConsoleState.open(new SqliteCommitter(stateStore, bus), {
      readTakeFile: (projectId: string, takeId: string): Promise<TakeFile> => store.readTakeFile(projectId, takeId),
      registries: opts.registries ?? SHIPPED_REGISTRIES,
      workspaceReportMaxBytes: config.consoleState.workspaceReportMaxBytes,
    });
    const store: EngineStore = new EngineStore({
      root: config.dataDir,
      access,
      log: (fields, message) => log.warn(fields, message),
      runner: pool,
      bus,
      cacheMaxBytes: config.cache.maxBytes,
      takeStates: consoleState.takes,
      memoryToggles: consoleState.memory,
    });
    cleanup.unshift(() => store.close());
    const [lost] = await Promise.all([recovering, store.start()]);
    for (const job of lost) log.warn({ job }, 'job lost by a previous run');
    metrics.countLost(lost.length);
    supervisor.onExit((job) => store.jobEnded(job.projectId));
    supervisor.onTransition((job, trigger) => {
      if (trigger === 'accepted' || trigger === 'exit') log.info({ job: summary(job), trigger }, `job ${job.state}`);
    });
    supervisor.onLeftovers((job, leftovers) => {
      const { killed, passes, ms, left } = leftovers;
      if (left.length > 0) log.error({ job: summary(job), leftovers: { killed, passes, ms, left } }, 'job processes survived the leftover sweep');
      else log.info({ job: summary(job), leftovers: { killed, passes, ms } }, 'job leftovers killed');
    });

    const sse = new SseHub(bus, config.sse, config.events.retention);
    metrics.observeStreams(sse);
    const writeProxy = new WriteProxy(config.writeUpstream, { onOutcome: (outcome) => metrics.countProxied(outcome) });
    const terminals = new TerminalManager(bus, procs, {
      storeRoot: config.dataDir,
      ...config.terminals,
      host: config.host,
      urlHost: config.ttydHost ?? config.host,
      env: config.childEnv,
      owner: config.stateDbPath,
      killGraceMs: config.jobs.killGraceMs,
      sweep,
    });
    const leftovers = await terminals.killLeftovers();
    if (leftovers > 0) log.warn({ killed: leftovers }, 'terminal processes left by a previous run killed');
    const readiness = new Readiness({ dataDir: config.dataDir, dispatchCli: config.dispatchCli, db, bus, poolStats: () => pool.stats() });
    const deps: AppDeps = { config, bus, sse, store, supervisor, pool, terminals, guards, startedAt: new Date(), metrics, writeProxy, console: consoleState, checkpointer, readiness };
    // Once the shutdown began, late requests get a 503 and answers close their connection.
    const gate = new ShutdownGate();
    const { app, api, recorder } = createApp(deps, {
      logger: log,
      gate: gate.middleware,
    });
    const server = http.createServer(app);
    // Requests the HTTP parser refuses get a JSON `{ detail }` like every other rejection.
    server.on('clientError', recorder === null ? answerClientError : (err: Error, socket: Duplex) => answerClientError(err, socket, (s, t, b) => recorder.recordRaw(s, t, b)));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const port = (server.address() as AddressInfo).port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    // One line says what runs where, and every setting that is not the default (issue 14, item 5).
    log.info(
      { version: APP_VERSION, url, dataDir: config.dataDir, stateDir: config.stateDir, stateDb: config.stateDbPath, dispatchCli: config.dispatchCli, settings: config.nonDefault },
      'console-backend listening',
    );
    if (config.writeUpstream !== null) log.info({ upstream: config.writeUpstream }, 'mutations are forwarded to the write upstream');
    if (config.apiToken === null && !isLoopbackHost(config.host)) {
      log.warn({ host: config.host }, 'listening beyond loopback without CONSOLE_API_TOKEN: every route is open to the network');
    }

    let closing: Promise<void> | undefined;
    const close = () =>
      (closing ??= (async () => {
        log.info('shutting down');
        // 1. Stop accepting: new connections are refused, requests on open ones get a 503;
        // 2. end event streams; 3. kill every job's and terminal's process tree and publish the
        // exits, while the requests in flight finish (at most the kill grace); 4. close
        // connections (only now: see shutdown-gate.ts), workers and the database.
        const serverClosed = once(server, 'close');
        gate.close();
        stopListening(server);
        sse.closeAll();
        const [, , unfinished] = await Promise.all([supervisor.stopAll(), terminals.stopAll(), gate.drained(config.jobs.killGraceMs)]);
        if (unfinished > 0) log.warn({ unfinished }, 'requests still unanswered at shutdown');
        server.closeAllConnections();
        server.close();
        await serverClosed;
        store.close();
        // A worker stuck in a system call cannot be stopped: the wait for it is bounded.
        if (!(await pool.close(config.jobs.killGraceMs))) log.warn('worker threads still busy at shutdown');
        await procs.close(); // after the jobs and terminals ended: their sweeps are done
        bus.close();
        await checkpointer.stop(); // its connection closes first: the main one checkpoints on close
        db.close();
        metrics.close();
        recorder?.close();
        log.info('stopped');
      })());
    return { url, port, server, deps, api, db, close };
  } catch (err) {
    for (const fn of cleanup) await fn();
    throw err;
  }
}

/**
 * Refuses a store root that is not a folder: CONSOLE_DATA_DIR naming nothing used to start and
 * serve an empty store without a word.
 * @throws ConfigError naming CONSOLE_DATA_DIR.
 */
function checkStoreRoot(dir: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(`CONSOLE_DATA_DIR: ${dir} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`}: set it to the engine store's folder, or unset it to serve the bundled sample store`);
  }
  if (!stat.isDirectory()) throw new ConfigError(`CONSOLE_DATA_DIR: ${dir} is not a folder: set it to the engine store's folder`);
}

/** The one instance of an embedded SQLite state database (cluster mode names its instances). */
const INSTANCE_ID = 'local';

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

function summary(job: { proposalId: string; pid: number | null; state: string; rc: number | null }) {
  return { proposalId: job.proposalId, pid: job.pid, state: job.state, rc: job.rc };
}
