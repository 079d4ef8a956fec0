// The build phase of start-up (style.md, practice 2: one composition root). Nothing listens yet: http-server.ts serves the parts and shutdown.ts stops them.
import fs from 'node:fs';
import os from 'node:os';
import { SseHub } from '../bus/sse.js';
import type { JobCanceller } from '../cluster/cancel-routing.js';
import { Membership } from '../cluster/membership.js';
import { APP_VERSION, ConfigError, type Config } from '../config/config.js';
import { WORKER_FILES } from '../config/paths.js';
import { ConsoleState } from '../console/index.js';
import type { TakeFile } from '../console/take-states.js';
import { storeAccess } from '../engine/read-store-file.js';
import { EngineStore } from '../engine/store.js';
import { WriteProxy } from '../http/write-proxy.js';
import { MetricsHistory } from '../metrics/history.js';
import { ServiceMetrics } from '../metrics/index.js';
import { raiseDescriptorLimit, type DescriptorLimits } from '../ops/descriptors.js';
import type { Logger } from '../ops/logger.js';
import { Readiness } from '../ops/readiness.js';
import { HousekeepingThread } from '../process/index.js';
import { SHIPPED_REGISTRIES, type Registries } from '../registry/index.js';
import { JobIo, Supervisor } from '../supervisor/index.js';
import { TerminalManager, type TerminalInfo, type Terminals } from '../terminals/index.js';
import { SynthesisPool } from '../workers/pool.js';
import { LOCAL_INSTANCE_ID, type StateBackend } from './backend.js';
import { openStateBackend } from './open-backend.js';
import { wireCluster, type ClusterWiring } from './cluster-wiring.js';
import { figureSources } from './figure-sources.js';

/** Every part of one instance, built and wired, not yet serving. */
export interface Parts {
  readonly config: Config;
  readonly log: Logger;
  readonly instanceId: string;
  readonly metrics: ServiceMetrics;
  /** The housekeeping thread: /proc scans, tree signals, SQLite's WAL checkpoints. */
  readonly housekeeping: HousekeepingThread;
  /** The job I/O thread: every job is forked by its spawn helper process and read there (job-io-main.ts). */
  readonly jobIo: JobIo;
  readonly backend: StateBackend;
  /** Cluster mode's membership (null on SQLite). */
  readonly membership: Membership | null;
  readonly pool: SynthesisPool;
  readonly supervisor: Supervisor;
  readonly store: EngineStore;
  readonly consoleState: ConsoleState;
  readonly terminals: TerminalManager;
  readonly sse: SseHub;
  readonly writeProxy: WriteProxy;
  readonly readiness: Readiness;
  readonly history: MetricsHistory;
  /** Cluster mode's wiring to the other instances (null on SQLite). */
  readonly cluster: ClusterWiring | null;
  /** Cancels as the routes make them: routed to the owning instance in cluster mode. */
  readonly cancels: JobCanceller;
  /** Terminals as the routes see them: every instance's in cluster mode. */
  readonly terminalView: Terminals;
  /** The descriptor limit after start-up raised it. */
  readonly descriptors: DescriptorLimits;
}

/** Builds every part in dependency order, closing what was built on a failure. @throws ConfigError, StateDbError, or a cluster join refusal. */
export async function composeService(
  config: Config,
  log: Logger,
  registries: Registries = SHIPPED_REGISTRIES,
  onFatal: (err: Error) => void = () => {},
): Promise<{ parts: Parts; abandon: () => Promise<void> }> {
  prepareStore(config, log);
  // The embedded database has one instance, whatever its port: its jobs are found again after a restart.
  const clustered = config.cluster.databaseUrl !== null;
  const instanceId = clustered ? (config.cluster.instanceId ?? defaultInstanceId(config.port)) : LOCAL_INSTANCE_ID;
  // Made first, so the counters start with the start-up recovery.
  const metrics = new ServiceMetrics(clustered ? instanceId : undefined);
  // Before the back end (its checkpoints run there), closed after it. Tasks it leaves unanswered fall back (logged).
  const onHang = (err: Error) => log.warn({ err: err.message }, 'the housekeeping thread was replaced');
  const housekeeping = new HousekeepingThread(WORKER_FILES.proc, { answerLimitMs: config.threads.answerLimitMs, onHang });
  let backend: StateBackend;
  try {
    backend = await openStateBackend(config, { metrics, log, instanceId, housekeeping, onFatal });
  } catch (err) {
    await housekeeping.close();
    throw err;
  }
  const { bus } = backend;
  let jobIo: JobIo;
  try {
    // Started now, ready by the first job: jobs' exits and lines come through it, so its death is fatal.
    // Lines cross encoded (their events' JSON) where the bus takes them so: both back ends' buses.
    const setup = { helperFile: WORKER_FILES.spawnHelper, nice: config.jobs.threadNice, encode: bus.publishEncoded !== undefined };
    const died = (err: Error) => {
      log.fatal(
        { err: err.message, stack: err.cause instanceof Error ? err.cause.stack : undefined },
        'the job I/O thread or its spawn helper process died: the exits and lines of the jobs can no longer be learnt; the service stops (its next start marks them lost)',
      );
      onFatal(err);
    };
    jobIo = new JobIo(WORKER_FILES.jobIo, setup, died, { youngGenerationMb: config.jobs.threadYoungGenerationMb, answerLimitMs: config.threads.answerLimitMs });
  } catch (err) {
    await backend.close();
    await housekeeping.close();
    throw err;
  }
  const cleanup: (() => unknown)[] = [() => backend.close(), () => housekeeping.close(), () => jobIo.close()];
  const abandon = async () => {
    for (const fn of cleanup) await fn();
  };
  try {
    let sse: SseHub | undefined;
    let supervisor: Supervisor | undefined;
    // Join before recovering anything, so a second process under a live instance's id stops before killing its jobs.
    const membership =
      backend.kind === 'postgres'
        ? membershipOf(config, backend, instanceId, metrics, log, { streams: () => sse?.size ?? 0, fenceJudged: () => supervisor?.fenceJudged() ?? Promise.resolve(0) })
        : null;
    const previousStart = membership ? await membership.join() : null;
    if (membership) cleanup.unshift(() => membership.stop());
    const pool = new SynthesisPool(config.workers.threads, WORKER_FILES, {
      timeoutMs: config.store.readTimeoutMs,
      retryAfterSeconds: config.jobs.retryAfterSeconds,
    });
    cleanup.unshift(() => pool.close(config.jobs.killGraceMs));
    supervisor = supervisorOf(config, backend, housekeeping, jobIo, instanceId);
    const jobs = supervisor;
    metrics.observeSupervisor(jobs);
    jobs.onFenced((job) => log.error({ job: jobSummary(job) }, 'job marked lost by another instance while this one could not beat: its processes were killed, nothing more is published for it'));
    const recovering = jobs.recoverLost(previousStart);
    // Settled here too, so a store start-up failure does not leave it unhandled.
    recovering.catch(() => {});
    // `store` is set before any request reads a take file through it.
    const consoleState = await ConsoleState.open(backend.committer, {
      readTakeFile: (projectId: string, takeId: string): Promise<TakeFile> => store.readTakeFile(projectId, takeId),
      registries,
      workspaceReportMaxBytes: config.consoleState.workspaceReportMaxBytes,
    });
    const store: EngineStore = new EngineStore({
      root: config.dataDir,
      access: storeAccess(config.dataDir, config.store),
      log: (fields, message) => log.warn(fields, message),
      runner: pool,
      bus,
      cacheMaxBytes: config.cache.maxBytes,
      takeStates: consoleState.takes,
      memoryToggles: consoleState.memory,
      watch: config.store.watch,
    });
    cleanup.unshift(() => store.close());
    const [lost] = await Promise.all([recovering, store.start()]);
    for (const job of lost) log.warn({ job }, 'job lost by a previous run');
    metrics.countLost(lost.length);
    logJobs(jobs, store, log);

    // Each stream holds a descriptor; jobs, workers and the database need theirs.
    const descriptors = raiseDescriptorLimit();
    if (descriptors.error !== null) log.warn({ soft: descriptors.soft, hard: descriptors.hard, err: descriptors.error }, 'the descriptor limit was not raised to its hard limit');
    const maxStreams = Math.min(config.sse.maxStreams, Math.max(16, Math.floor(descriptors.soft / 2)));
    sse = new SseHub(bus, { ...config.sse, maxStreams }, config.events.retention);
    metrics.observeStreams(sse);
    const writeProxy = new WriteProxy(config.writeUpstream, { onOutcome: (outcome) => metrics.countProxied(outcome) });
    let recordTerminal: ((t: TerminalInfo) => void) | undefined;
    const terminals = terminalsOf(config, backend, housekeeping, (t) => recordTerminal?.(t));
    const leftovers = await terminals.killLeftovers();
    if (leftovers > 0) log.warn({ killed: leftovers }, 'terminal processes left by a previous run killed');
    const readiness = new Readiness({ dataDir: config.dataDir, dispatchCli: config.dispatchCli, stateDatabase: () => backend.readiness(), poolStats: () => pool.stats() });
    const figures = figureSources({ supervisor: jobs, bus, sse, pool, metrics });
    metrics.observeFigures(figures);
    metrics.observeReadiness(readiness);
    if (membership) metrics.observeMembership(membership);
    const history = new MetricsHistory(figures, { intervalMs: config.history.sampleMs });
    cleanup.unshift(() => history.stop());
    // Cluster mode: another instance's console write changes what the engine store's answers carry.
    backend.onConsoleChanged(() => {
      consoleState.reload().catch((err: Error) => log.warn({ err: err.message }, 'console state not read again: the state database refused'));
    });
    const cluster = backend.shared ? wireCluster({ shared: backend.shared, backend, config, instanceId, store, supervisor: jobs, terminals, log }) : null;
    if (cluster) cleanup.unshift(() => cluster.stop());
    recordTerminal = cluster?.recordTerminal;
    await backend.start();
    membership?.start();
    const parts: Parts = {
      config,
      log,
      instanceId,
      metrics,
      housekeeping,
      jobIo,
      backend,
      membership,
      pool,
      supervisor: jobs,
      store,
      consoleState,
      terminals,
      sse,
      writeProxy,
      readiness,
      history,
      cluster,
      cancels: cluster?.cancels ?? jobs,
      terminalView: cluster?.terminals ?? terminals,
      descriptors,
    };
    return { parts, abandon };
  } catch (err) {
    await abandon();
    throw err;
  }
}

/** Cluster mode's membership of this instance (cluster.md, Operations): heartbeats, the judging of others, fencing. */
function membershipOf(
  config: Config,
  backend: StateBackend,
  instanceId: string,
  metrics: ServiceMetrics,
  log: Logger,
  late: { streams: () => number; fenceJudged: () => Promise<number> },
): Membership {
  return new Membership(backend.store, backend.bus, {
    id: instanceId,
    address: config.cluster.instanceUrl ?? `http://${hostForUrl(config.host)}:${config.port}`,
    version: APP_VERSION,
    timeoutMs: config.cluster.instanceTimeoutMs,
    streamClients: late.streams,
    onJudged: (dead, jobs, terminals) => {
      log.warn({ instance: dead, jobs, terminals }, 'instance stopped beating: its running jobs were marked lost and its terminals ended');
      // Counted by the instance that marked them: the jobs-lost alert sees them once.
      metrics.countLost(jobs);
    },
    onConnection: (connected, err) =>
      connected
        ? log.warn({ instance: instanceId }, 'state database reachable again')
        : log.error({ instance: instanceId, err: (err as Error | undefined)?.message }, 'state database unreachable: heartbeats fail'),
    // The supervisor exists before the heartbeats start.
    onFenced: late.fenceJudged,
    onRejoined: (fenced) => log.error({ instance: instanceId, fencedJobs: fenced }, 'this instance was judged dead by another (it could not beat): its jobs marked lost were killed; it joined again'),
  });
}

/** The sweep of a stopped tree's leftovers (CONSOLE_SWEEP_MAX_PASSES, CONSOLE_SWEEP_MAX_MS). */
const sweepOf = (config: Config) => ({ maxPasses: config.processes.sweepMaxPasses, maxMs: config.processes.sweepMaxMs });

/** The supervisor of this instance's generation jobs. */
function supervisorOf(config: Config, backend: StateBackend, housekeeping: HousekeepingThread, jobIo: JobIo, instanceId: string): Supervisor {
  const clustered = backend.kind === 'postgres';
  return new Supervisor(backend.bus, backend.committer, housekeeping, jobIo, {
    instanceId,
    reportInstance: clustered,
    dispatchCli: config.dispatchCli,
    childEnv: config.childEnv,
    maxRunning: config.jobs.maxRunning,
    retryAfterSeconds: config.jobs.retryAfterSeconds,
    killGraceMs: config.jobs.killGraceMs,
    lineMaxBytes: config.jobs.lineMaxBytes,
    historySize: config.jobs.historySize,
    sweep: sweepOf(config),
    nice: config.jobs.nice,
    // Cluster mode: past CONSOLE_HELD_EVENTS_MAX held events too (the database away).
    backlogMax: clustered ? Math.min(config.events.backlogMax, config.cluster.heldEventsMax) : config.events.backlogMax,
  });
}

/** The terminals of this instance; `onRecord` records each for every instance (cluster mode). */
function terminalsOf(config: Config, backend: StateBackend, housekeeping: HousekeepingThread, onRecord: (t: TerminalInfo) => void): TerminalManager {
  return new TerminalManager(backend.bus, housekeeping, {
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
    sweep: sweepOf(config),
    onRecord,
  });
}

/** Seeds the default copy of the bundled sample store, then checks the store root and the dispatch tool. @throws ConfigError naming CONSOLE_DATA_DIR. */
function prepareStore(config: Config, log: Logger): void {
  if (config.sampleSeedDir !== null && !fs.existsSync(config.dataDir)) {
    // The bundled store is copied once into the state folder, so generated takes and media
    // never land in the repository.
    fs.cpSync(config.sampleSeedDir, config.dataDir, { recursive: true });
    log.info({ from: config.sampleSeedDir, to: config.dataDir }, 'sample engine store copied');
  }
  // A store that is not there is a mistake in the configuration, not an empty store.
  checkStoreRoot(config.dataDir);
  // The service can serve without its tool, but every generation request would be a 500: said now.
  if (!isFile(config.dispatchCli)) {
    log.warn(
      { dispatchCli: config.dispatchCli },
      `the dispatch tool ${config.dispatchCli} (DISPATCH_CLI) does not exist: generation requests answer 500 until it does (npm run build makes the default one)`,
    );
  }
}

/** The supervisor's transitions and leftover sweeps in the log; each job's end tells the store. */
function logJobs(supervisor: Supervisor, store: EngineStore, log: Logger): void {
  supervisor.onExit((job) => store.jobEnded(job.projectId));
  supervisor.onTransition((job, trigger) => {
    if (trigger === 'accepted' || trigger === 'exit') log.info({ job: jobSummary(job), trigger }, `job ${job.state}`);
  });
  supervisor.onLeftovers((job, leftovers) => {
    const { killed, passes, ms, left } = leftovers;
    if (left.length > 0) log.error({ job: jobSummary(job), leftovers: { killed, passes, ms, left } }, 'job processes survived the leftover sweep');
    else log.info({ job: jobSummary(job), leftovers: { killed, passes, ms } }, 'job leftovers killed');
  });
}

/** Refuses a store root that is not a folder, which would serve an empty store without a word. @throws ConfigError naming CONSOLE_DATA_DIR. */
function checkStoreRoot(dir: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ConfigError(
      `CONSOLE_DATA_DIR: ${dir} ${code === 'ENOENT' ? 'does not exist' : `cannot be read (${(err as Error).message})`}: set it to the engine store's folder, or unset it to serve the bundled sample store`,
    );
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
export function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}

function isFile(file: string): boolean {
  try {
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** What the log says of a job. */
export function jobSummary(job: { proposalId: string; pid: number | null; state: string; rc: number | null }) {
  return { proposalId: job.proposalId, pid: job.pid, state: job.state, rc: job.rc };
}
