/** Service routes: health, readiness, config, system status (service-spec.md §Service routes; api-decisions.md §Service routes with partial shape). */
import { z } from 'zod';
import { APP_VERSION, CONFIG_SCHEMA_VERSION } from '../../config/config.js';
import { allocator, mainMemory } from '../../ops/memory.js';
import { READINESS_CHECKS } from '../../ops/readiness.js';
import { NotReadyError } from '../errors.js';
import { hostPolicy } from '../host-check.js';
import type { Api } from '../route.js';
import { ErrorBody, Job } from '../schemas.js';
import { BackpressureStats, DatabaseStatus, JobIoThreadStats, MemoryStatus, PriorityStats, ReplayCacheStats, SpawnerStats } from './status-schemas.js';
import { holdsToken } from '../auth.js';
import type { AppDeps } from './deps.js';

/** How many recent jobs the system status lists. */
const STATUS_RECENT_JOBS = 20;

export function serviceRoutes(api: Api, deps: AppDeps): void {
  const { config } = deps;
  api.route({
    method: 'get',
    path: '/api/health',
    operationId: 'health',
    summary: 'Health',
    tag: 'Service',
    answers: { 200: { description: 'The service is up.', schema: z.object({ ok: z.literal(true) }) } },
    handler: ({ res }) => {
      res.json({ ok: true });
    },
  });

  const Check = z
    .object({
      name: z.enum(READINESS_CHECKS),
      ok: z.boolean(),
      detail: z.string().optional().meta({
        description: 'What was found; what is wrong when `ok` is false. Only with the token (or when CONSOLE_API_TOKEN is unset): it names paths and the database, which an open route does not tell.',
      }),
    })
    .meta({ id: 'ReadinessCheck' });
  api.route({
    method: 'get',
    path: '/api/ready',
    operationId: 'ready',
    summary: 'Readiness',
    description:
      'Whether this instance can do its work now, for a balancer to poll (every second is fine: no check scans the store). Checks: `store` (CONSOLE_DATA_DIR is a folder this process can read), `dispatchTool` (DISPATCH_CLI is a file), `stateDatabase` (its write lock can be taken without waiting, and events are being stored), `workers` (the worker pool has threads). `/api/health` says the process is alive; this says what it needs is there. Open without the token, which then gives `ready` and each check’s name and result only (and the failing checks’ names in `detail`); with the token, each check’s `detail` too.',
    tag: 'Service',
    answers: {
      200: { description: 'Ready: every check is ok.', schema: z.object({ ready: z.literal(true), checks: z.array(Check) }) },
      503: {
        description: 'Not ready (`not_ready`): `checks` lists every check, `detail` names the failing ones; or the service is shutting down (`shutting_down`, the error body alone).',
        schema: z.union([z.object({ detail: z.string(), code: z.literal('not_ready'), ready: z.literal(false), checks: z.array(Check) }).meta({ id: 'NotReady' }), ErrorBody]),
      },
    },
    handler: async ({ req, res }) => {
      const report = await deps.readiness.check();
      // Without the token, nothing that describes the installation (paths, the database, errors).
      const checks = holdsToken(deps.config.apiToken, req) ? report.checks : report.checks.map(({ name, ok }) => ({ name, ok }));
      if (!report.ready) throw new NotReadyError(checks);
      res.json({ ...report, checks });
    },
  });

  api.route({
    method: 'get',
    path: '/api/config',
    operationId: 'getConfig',
    summary: 'Front-end configuration',
    description: '`ttydHost` is TTYD_HOST trimmed, null when unset or blank (the front end then uses the page’s own host name).',
    tag: 'Service',
    answers: {
      200: {
        description: 'Configuration.',
        schema: z.object({ schemaVersion: z.literal(CONFIG_SCHEMA_VERSION), ttydHost: z.string().nullable() }),
      },
    },
    handler: ({ res }) => {
      res.json({ schemaVersion: CONFIG_SCHEMA_VERSION, ttydHost: config.ttydHost });
    },
  });

  api.route({
    method: 'get',
    path: '/api/system-status',
    operationId: 'systemStatus',
    summary: 'System status',
    description:
      'What an operator reads during a generation storm: version, uptime, jobs by state and the recent jobs, the bus, the worker pool, the cache, the memory, the start-up guards, the write proxy, the Host check and every configured bound.',
    tag: 'Service',
    answers: {
      200: {
        description: 'Status.',
        schema: z.looseObject({
          version: z.literal(APP_VERSION),
          uptimeSeconds: z.number(),
          jobs: z.looseObject({
            running: z.number().int(),
            maxRunning: z.number().int(),
            byState: z.record(z.string(), z.number().int()).meta({
              description:
                'Jobs by state over the history kept in the state database (running, exited ok, exited failed, lost). A job that ended on this instance counts in its final state at once, also while its exit event (with which that state is stored) waits to be stored.',
            }),
            recent: z.array(Job),
            priority: PriorityStats,
            backpressure: BackpressureStats,
            spawner: SpawnerStats,
            thread: JobIoThreadStats,
          }),
          bus: z.looseObject({
            subscribers: z.number().int(),
            lastEventId: z.string(),
            retention: z.number().int(),
            replay: z
              .object({
                maxBytes: z.number().int(),
                events: z.number().int(),
                bytes: z.number().int(),
                pagesFromMemory: z.number().int(),
                pagesFromDatabase: z.number().int(),
                cache: ReplayCacheStats,
              })
              .meta({
                description:
                  'The newest events kept in memory for `Last-Event-ID` replays (CONSOLE_SSE_REPLAY_MEMORY_BYTES): how many, their bytes, and the replay pages read from memory and from the database (a resume point older than what is kept).',
              }),
            streams: z
              .object({
                open: z.number().int(),
                maxStreams: z.number().int(),
                maxStreamsPerAddress: z.number().int(),
                refusedTotal: z.number().int(),
                refusedPerAddress: z.number().int(),
                queuedBytes: z.number().int(),
                totalQueueBytes: z.number().int(),
                droppedOverTotal: z.number().int(),
                databaseReplays: z.number().int(),
                databaseReplaysWaiting: z.number().int(),
              })
              .meta({
                description:
                  'The event streams’ bounds and figures: open streams and the bound in all (CONSOLE_SSE_MAX_STREAMS, at most half the descriptor limit) and per remote address (CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS, 0: none), streams refused at each since start-up, the bytes queued for all clients now against CONSOLE_SSE_TOTAL_QUEUE_BYTES and the clients dropped to keep within it, and the replays reading the database now and waiting their turn (CONSOLE_SSE_MAX_DATABASE_REPLAYS).',
              }),
          }),
          memory: MemoryStatus,
          descriptors: z
            .object({
              soft: z.number().meta({ description: 'The soft limit now (after start-up raised it).' }),
              hard: z.number(),
              raisedFrom: z.number().nullable().meta({ description: 'The soft limit before start-up raised it to the hard one; null when it was not raised.' }),
              error: z.string().nullable().meta({ description: 'Why it could not be raised; null when it was, or needed not be.' }),
              open: z.number().int().nullable().meta({ description: 'Descriptors open now.' }),
            })
            .meta({
              description: 'The file descriptor limit (RLIMIT_NOFILE): the soft limit is raised to the hard one at start-up (with `prlimit`), and the event streams are bounded at half of it.',
            }),
          cache: z
            .looseObject({
              watchedDirectories: z
                .number()
                .int()
                .meta({ description: 'Store folders watched now: the root, projects/, memory/, and each project folder with its shots/ and takes/ (3 + 3 per project).' }),
              watchFailures: z.number().int().meta({ description: 'Watch set-ups that failed (e.g. the inotify limit reached): edits there are not seen.' }),
              watchesReplaced: z.number().int().meta({ description: 'Watches set again because their folder was replaced at the same path (published by rename); the old ones are closed.' }),
              filesRead: z.number().int().meta({ description: 'Store files (project, shot and take files) read by synthesis since start-up.' }),
              projectReads: z.number().int().meta({ description: 'Projects read whole by synthesis since start-up (the first read, and after a change of the project file or a folder).' }),
              projectPatches: z.number().int().meta({ description: 'Projects brought up to date by re-reading only the shot and take files that changed.' }),
              changeLogFiles: z.number().int().meta({ description: 'Shot and take file changes kept for worker threads whose index has not seen them yet.' }),
            })
            .meta({ description: 'The cache of synthesised answers and the store watcher that invalidates it (README, Store cache).' }),
          database: DatabaseStatus,
          instance: z.string().nullable().meta({ description: 'Cluster mode: the id of the instance that answered (CONSOLE_INSTANCE_ID); null on the embedded SQLite database.' }),
          instances: z
            .array(
              z.object({
                id: z.string(),
                address: z.string(),
                version: z.string(),
                startedAt: z.string(),
                heartbeatAt: z.string(),
                alive: z.boolean(),
                runningJobs: z.number().int(),
                streamClients: z.number().int(),
              }),
            )
            .meta({
              description:
                'Cluster mode: every instance sharing the database, by id, with its last heartbeat; one whose heartbeat is older than CONSOLE_INSTANCE_TIMEOUT_MS is not alive and stays listed for an hour. Empty on the embedded SQLite database.',
            }),
          fallbacks: z.record(z.string(), z.number().int()).meta({ description: 'Raises of each sanctioned fallback by name, kept across restarts; every registered fallback is listed.' }),
          terminals: z.array(
            z.looseObject({
              projectId: z.string(),
              pid: z.number().int(),
              port: z.number().int(),
              state: z.enum(['running', 'exited', 'stopped']),
              startedAt: z.string(),
            }),
          ),
          writeProxy: z
            .object({
              enabled: z.boolean(),
              upstream: z.string().nullable(),
              forwarded: z.number().int(),
              answered: z.number().int(),
              failures: z.number().int(),
              lastFailure: z.object({ at: z.string(), detail: z.string() }).nullable(),
            })
            .meta({ description: 'SERVICE_WRITE_UPSTREAM and the mutations forwarded to it since start-up.' }),
          hosts: z.object({ enforced: z.boolean(), allowed: z.array(z.string()) }).meta({
            description:
              'The Host check (DNS rebinding defence): whether it runs (bound to a loopback address, or CONSOLE_ALLOWED_HOSTS set), and CONSOLE_ALLOWED_HOSTS in canonical form; loopback names are always served.',
          }),
          limits: z.record(z.string(), z.number()).meta({ description: 'Every configured bound, by the variable that sets it (README, Configuration), with its value on this instance.' }),
        }),
      },
    },
    handler: async ({ res }) => {
      res.json(await systemStatus(deps));
    },
  });
}

/**
 * Every configured bound of the service, by the name an operator sets it with (README,
 * Configuration): what a careless or hostile input meets. A bound that is not listed here is
 * not configurable, and a configurable one is listed here.
 */
export function limitsOf(c: AppDeps['config']): Record<string, number> {
  return {
    CONSOLE_MAX_BODY_BYTES: c.http.maxBodyBytes,
    CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: c.http.keepAliveTimeoutMs,
    CONSOLE_MAX_RUNNING_JOBS: c.jobs.maxRunning,
    CONSOLE_LINE_MAX_BYTES: c.jobs.lineMaxBytes,
    CONSOLE_JOB_HISTORY: c.jobs.historySize,
    CONSOLE_JOB_NICE: c.jobs.nice,
    CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: c.jobs.threadYoungGenerationMb,
    CONSOLE_THREAD_ANSWER_LIMIT_MS: c.threads.answerLimitMs,
    CONSOLE_SWEEP_MAX_PASSES: c.processes.sweepMaxPasses,
    CONSOLE_SWEEP_MAX_MS: c.processes.sweepMaxMs,
    CONSOLE_EVENT_RETENTION: c.events.retention,
    CONSOLE_EVENT_BACKLOG_MAX: c.events.backlogMax,
    CONSOLE_SSE_MAX_QUEUE_BYTES: c.sse.maxQueueBytes,
    CONSOLE_SSE_REPLAY_MEMORY_BYTES: c.sse.replayMemoryBytes,
    CONSOLE_SSE_REPLAY_CACHE_BYTES: c.sse.replayCacheBytes,
    CONSOLE_SSE_TOTAL_QUEUE_BYTES: c.sse.totalQueueBytes,
    CONSOLE_SSE_MAX_STREAMS: c.sse.maxStreams,
    CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS: c.sse.maxStreamsPerAddress,
    CONSOLE_SSE_MAX_DATABASE_REPLAYS: c.sse.maxDatabaseReplays,
    CONSOLE_CACHE_MAX_BYTES: c.cache.maxBytes,
    CONSOLE_CLICKS_PER_PROJECT: c.consoleState.clicksPerProject,
    CONSOLE_CLICKS_MAX_TOTAL: c.consoleState.clicksMaxTotal,
    CONSOLE_WORKSPACE_REPORT_MAX_BYTES: c.consoleState.workspaceReportMaxBytes,
    CONSOLE_STORE_FILE_MAX_BYTES: c.store.fileMaxBytes,
    CONSOLE_STORE_JSON_MAX_DEPTH: c.store.jsonMaxDepth,
    CONSOLE_STORE_READ_TIMEOUT_MS: c.store.readTimeoutMs,
  };
}

/** `memory` of the system status: the RSS and main heap now, the allocator, and MALLOC_ARENA_MAX and MALLOC_CONF as started with. */
function memoryOf(c: AppDeps['config']) {
  const m = mainMemory();
  return { rssBytes: m.rss, heapUsedBytes: m.heapUsed, allocator: allocator(), mallocArenaMax: c.mallocArenaMax, mallocConf: c.mallocConf };
}

/** What the system status reads from the state database; null when it cannot be read now. */
async function fromDatabase(d: AppDeps) {
  try {
    const [counts, recent, fallbacks, instances, terminals] = await Promise.all([
      d.supervisor.countsByState(),
      d.supervisor.list(STATUS_RECENT_JOBS),
      d.console.fallbacks.counts(),
      d.membership ? d.membership.list() : [],
      d.terminals.list(),
    ]);
    return { counts: counts as Record<string, number>, recent, fallbacks, instances, terminals, error: null as string | null };
  } catch (err) {
    // Cluster mode with the database away: the status still answers, from this instance's memory.
    const counts: Record<string, number> = { running: d.supervisor.runningCount };
    return { counts, recent: d.supervisor.runningJobs(), fallbacks: {}, instances: [], terminals: [], error: (err as Error).message };
  }
}

async function systemStatus(d: AppDeps): Promise<Record<string, unknown>> {
  const now = Date.now();
  const db = await fromDatabase(d);
  const byState = { running: 0, 'exited ok': 0, 'exited failed': 0, lost: 0, ...db.counts };
  return {
    version: APP_VERSION,
    startedAt: d.startedAt.toISOString(),
    uptimeSeconds: Math.round((now - d.startedAt.getTime()) / 1000),
    jobs: {
      running: d.supervisor.runningCount,
      maxRunning: d.config.jobs.maxRunning,
      startedSinceStart: d.supervisor.startedCount,
      byState,
      recent: db.recent,
      priority: d.supervisor.priority.stats(),
      backpressure: d.supervisor.gate.stats(),
      spawner: d.supervisor.spawnerStats(),
      thread: d.supervisor.ioThreadStats(),
    },
    bus: {
      subscribers: d.sse.size,
      lastEventId: String(d.bus.lastId),
      retention: d.config.events.retention,
      stored: d.bus.storedCount,
      publishedSinceStart: d.metrics.eventsPublished,
      slowClientsDropped: d.sse.slowDrops,
      replay: d.sse.replayStats(),
      streams: d.sse.streamStats(),
    },
    workers: d.pool.stats(),
    cache: d.store.stats(),
    memory: memoryOf(d.config),
    descriptors: d.descriptors(),
    // What it waits for when the database cannot be read: the error, and the events held meanwhile.
    database: { ...d.database.status(), reachable: db.error === null, ...(db.error === null ? {} : { error: db.error, heldEvents: d.bus.backlog }) },
    instance: d.membership?.id ?? null,
    instances: db.instances,
    guards: d.guards,
    // Raises of each sanctioned fallback, persisted (every registered name, 0 when never raised).
    fallbacks: db.fallbacks,
    writeProxy: d.writeProxy.status(),
    hosts: hostPolicy(d.config),
    limits: limitsOf(d.config),
    terminals: db.terminals.map((t) => ({
      projectId: t.projectId,
      pid: t.pid,
      port: t.port,
      state: t.state,
      startedAt: t.startedAt,
      endedAt: t.endedAt,
      rc: t.rc,
      url: t.url,
    })),
  };
}
