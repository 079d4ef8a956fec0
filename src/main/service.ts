/**
 * The composition root (style.md, practice 2): builds the state database, bus, supervisor,
 * worker pool and engine store, hands them to `createApp`, listens, and owns shutdown.
 */
import { once } from 'node:events';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { JobCanceller } from '../cluster/cancel-routing.js';
import { Membership } from '../cluster/membership.js';
import { ConsoleState } from '../console/index.js';
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
import { MetricsHistory } from '../metrics/history.js';
import { SHIPPED_REGISTRIES, type Registries } from '../registry/index.js';
import type { Db } from '../state/sqlite/db.js';
import { ProcTable } from '../process/index.js';
import { Supervisor } from '../supervisor/index.js';
import { TerminalManager, type TerminalInfo, type Terminals } from '../terminals/index.js';
import { SynthesisPool } from '../workers/pool.js';
import { WORKER_FILES } from '../config/paths.js';
import { APP_VERSION, ConfigError, type Config } from '../config/config.js';
import { openDescriptors, raiseDescriptorLimit } from '../ops/descriptors.js';
import { checkStartupGuards, utcDate } from '../ops/guards.js';
import { createLogger, type Logger } from '../ops/logger.js';
import { Readiness } from '../ops/readiness.js';
import { wireCluster } from './cluster-wiring.js';
import { figureSources } from './figure-sources.js';
import { LOCAL_INSTANCE_ID, openStateBackend, type StateBackend } from './backend.js';

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
  /** The embedded SQLite database; null in cluster mode. */
  readonly db: Db | null;
  close(): Promise<void>;
}

/**
 * Starts the service: guards first (nothing is opened or served when they fail), then the
 * state, the engine store and the HTTP server.
 * @throws StartupGuardError, ConfigError (CONSOLE_DATA_DIR not a folder), StateDbError, or a
 *   listen error (EADDRINUSE…).
 */
export async function startService(config: Config, opts: ServiceOptions = {}): Promise<Service> {
  const log = opts.logger ?? createLogger(config.logLevel, { secrets: config.secrets, format: config.logFormat });
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

  // The embedded database has one instance, whatever its port: its jobs are found again after a restart.
  const clustered = config.cluster.databaseUrl !== null;
  const instanceId = clustered ? (config.cluster.instanceId ?? defaultInstanceId(config.port)) : LOCAL_INSTANCE_ID;
  // Made first, so the counters start with the start-up recovery.
  const metrics = new ServiceMetrics(clustered ? instanceId : undefined);
  // One worker thread scans /proc and signals the trees of jobs and terminals, off the loop; it
  // is the housekeeping thread, where SQLite's WAL checkpoints run too (made before the back
  // end, closed after it). The worker threads are made first: they load their modules while the
  // rest is built, and the recoveries below wait for them side by side, not one after the other.
  const procs = new ProcTable(WORKER_FILES.proc);
  let backend: StateBackend;
  try {
    backend = await openStateBackend(config, { metrics, log, instanceId, housekeeping: procs });
  } catch (err) {
    await procs.close();
    throw err;
  }
  const { bus, db } = backend;
  const cleanup: (() => unknown)[] = [() => backend.close(), () => procs.close()];
  try {
    // Cluster mode: this instance joins before anything of its own is recovered, so a second
    // process under a live instance's id stops here, before it kills that instance's jobs.
    const membership =
      backend.kind === 'postgres'
        ? new Membership(backend.store, bus, {
            id: instanceId,
            // Where the others reach it (the history route reads each live instance's there).
            address: config.cluster.instanceUrl ?? `http://${hostForUrl(config.host)}:${config.port}`,
            version: APP_VERSION,
            timeoutMs: config.cluster.instanceTimeoutMs,
            streamClients: () => sse.size,
            onJudged: (dead, jobs, terminals) => {
              log.warn({ instance: dead, jobs, terminals }, 'instance stopped beating: its running jobs were marked lost and its terminals ended');
              // Counted by the instance that marked them: the jobs-lost alert sees them once.
              metrics.countLost(jobs);
            },
            onConnection: (connected, err) =>
              connected ? log.warn({ instance: instanceId }, 'state database reachable again') : log.error({ instance: instanceId, err: (err as Error | undefined)?.message }, 'state database unreachable: heartbeats fail'),
            // Set once the supervisor exists (below), before the heartbeats start.
            onFenced: () => supervisor.fenceJudged(),
            onRejoined: (fenced) => log.error({ instance: instanceId, fencedJobs: fenced }, 'this instance was judged dead by another (it could not beat): its jobs marked lost were killed; it joined again'),
          })
        : null;
    const previousStart = membership ? await membership.join() : null;
    if (membership) cleanup.unshift(() => membership.stop());
    const pool = new SynthesisPool(config.workers.threads, WORKER_FILES, {
      timeoutMs: config.store.readTimeoutMs,
      retryAfterSeconds: config.jobs.retryAfterSeconds,
    });
    cleanup.unshift(() => pool.close(config.jobs.killGraceMs));
    const sweep = { maxPasses: config.processes.sweepMaxPasses, maxMs: config.processes.sweepMaxMs };
    const supervisor = new Supervisor(bus, backend.committer, procs, {
      instanceId,
      reportInstance: clustered,
      dispatchCli: config.dispatchCli,
      childEnv: config.childEnv,
      maxRunning: config.jobs.maxRunning,
      retryAfterSeconds: config.jobs.retryAfterSeconds,
      killGraceMs: config.jobs.killGraceMs,
      lineMaxBytes: config.jobs.lineMaxBytes,
      historySize: config.jobs.historySize,
      sweep,
      nice: config.jobs.nice,
      // Cluster mode: past CONSOLE_HELD_EVENTS_MAX held events too (the database away).
      backlogMax: clustered ? Math.min(config.events.backlogMax, config.cluster.heldEventsMax) : config.events.backlogMax,
    });
    metrics.observeSupervisor(supervisor);
    supervisor.onFenced((job) => log.error({ job: summary(job) }, 'job marked lost by another instance while this one could not beat: its processes were killed, nothing more is published for it'));
    const recovering = supervisor.recoverLost(previousStart);
    // Settled here too, so a failure of the store's start-up does not leave it unhandled.
    recovering.catch(() => {});
    // Every read of the store goes through its real root, resolved once here (issue 10, item 4).
    const access = storeAccess(config.dataDir, config.store);
    // The console's recorded take states and memory toggles feed the engine store's answers;
    // take actions read their take file through the store (`store` is set before any request).
    const consoleState = await ConsoleState.open(backend.committer, {
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

    // Streams are bounded well below the descriptors there are: each holds one, and jobs, workers
    // and the database need theirs.
    const descriptors = raiseDescriptorLimit();
    if (descriptors.error !== null) log.warn({ soft: descriptors.soft, hard: descriptors.hard, err: descriptors.error }, 'the descriptor limit was not raised to its hard limit');
    const maxStreams = Math.min(config.sse.maxStreams, Math.max(16, Math.floor(descriptors.soft / 2)));
    const sse = new SseHub(bus, { ...config.sse, maxStreams }, config.events.retention);
    metrics.observeStreams(sse);
    const writeProxy = new WriteProxy(config.writeUpstream, { onOutcome: (outcome) => metrics.countProxied(outcome) });
    // Cluster mode records each terminal for every instance (set below, before any starts).
    let recordTerminal: ((t: TerminalInfo) => void) | undefined;
    const terminals = new TerminalManager(bus, procs, {
      storeRoot: config.dataDir,
      ...config.terminals,
      // A terminal is a shell: it listens beyond loopback only when it asks for a credential,
      // which the API hands out behind the token.
      host: config.apiToken !== null ? config.host : '127.0.0.1',
      credentials: config.apiToken !== null,
      urlHost: config.ttydHost ?? (config.apiToken !== null ? config.host : '127.0.0.1'),
      env: config.childEnv,
      owner: config.stateDbPath,
      killGraceMs: config.jobs.killGraceMs,
      sweep,
      onRecord: (t) => recordTerminal?.(t),
    });
    const leftovers = await terminals.killLeftovers();
    if (leftovers > 0) log.warn({ killed: leftovers }, 'terminal processes left by a previous run killed');
    const readiness = new Readiness({ dataDir: config.dataDir, dispatchCli: config.dispatchCli, stateDatabase: () => backend.readiness(), poolStats: () => pool.stats() });
    // The last 15 minutes of the figures (the ops page's charts) and the same figures for Prometheus.
    const figures = figureSources({ supervisor, bus, sse, pool, metrics });
    metrics.observeFigures(figures);
    metrics.observeReadiness(readiness);
    if (membership) metrics.observeMembership(membership);
    const history = new MetricsHistory(figures, { intervalMs: config.history.sampleMs });
    cleanup.unshift(() => history.stop());
    // Cluster mode: another instance's console write changes the take states and toggles the
    // engine store's answers carry.
    backend.onConsoleChanged(() => {
      consoleState.reload().catch((err: Error) => log.warn({ err: err.message }, 'console state not read again: the state database refused'));
    });
    // Cluster mode: what the instances share besides the database (cluster-wiring.ts).
    const cluster = backend.shared
      ? wireCluster({ shared: backend.shared, backend, config, instanceId, bus, store, supervisor, terminals, log })
      : null;
    if (cluster) cleanup.unshift(() => cluster.stop());
    const cancels: JobCanceller = cluster?.cancels ?? supervisor;
    const terminalView: Terminals = cluster?.terminals ?? terminals;
    recordTerminal = cluster?.recordTerminal;
    await backend.start();
    membership?.start();
    const deps: AppDeps = {
      descriptors: () => ({ ...descriptors, open: openDescriptors() }),
      config,
      bus,
      sse,
      store,
      supervisor,
      cancels,
      pool,
      terminals: terminalView,
      guards,
      startedAt: new Date(),
      metrics,
      writeProxy,
      console: consoleState,
      database: backend,
      membership,
      readiness,
      history,
    };
    // Once the shutdown began, late requests get a 503 and answers close their connection.
    const gate = new ShutdownGate();
    const { handler, serverOptions, api, recorder } = createApp(deps, {
      logger: log,
      gate: gate.middleware,
    });
    const server = http.createServer(serverOptions, handler);
    // Requests the HTTP parser refuses get a JSON `{ detail }` like every other rejection.
    server.on('clientError', recorder === null ? answerClientError : (err: Error, socket: Duplex) => answerClientError(err, socket, (s, t, b) => recorder.recordRaw(s, t, b)));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(config.port, config.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    history.start();
    const port = (server.address() as AddressInfo).port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = `http://${host}:${port}`;
    // One line says what runs where, and every setting that is not the default (issue 14, item 5).
    log.info(
      {
        version: APP_VERSION,
        url,
        dataDir: config.dataDir,
        stateDir: config.stateDir,
        // Cluster mode: the shared database (without its password) and this instance's id.
        ...(membership ? { database: backend.status().url, instance: instanceId } : { stateDb: config.stateDbPath }),
        dispatchCli: config.dispatchCli,
        settings: config.nonDefault,
      },
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
        cluster?.stop();
        store.close();
        // A worker stuck in a system call cannot be stopped: the wait for it is bounded.
        if (!(await pool.close(config.jobs.killGraceMs))) log.warn('worker threads still busy at shutdown');
        await membership?.stop();
        await bus.close();
        await backend.close();
        await procs.close(); // after the jobs and terminals ended (their sweeps are done) and the last checkpoint
        history.stop();
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

/**
 * CONSOLE_INSTANCE_ID's default (cluster.md): host name and port; with PORT=0 the port is not
 * known yet, so the process id stands in for it.
 */
function defaultInstanceId(port: number): string {
  return `${os.hostname()}:${port === 0 ? `pid${process.pid}` : port}`;
}

/** A host as it is written in a URL (IPv6 in brackets). */
function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

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
