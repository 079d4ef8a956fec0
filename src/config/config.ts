// The service's configuration, the only module that reads the environment (style.md, practice 1):
// parsed once with zod into a deep-frozen {@link Config}; a bad value throws {@link ConfigError}.
import path from 'node:path';
import { ServiceError } from '../errors/index.js';
import { envSchema, type LogFormat, type LogLevel } from './env.js';
import { REPO_ROOT } from './paths.js';

export { canonicalHost, LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './env.js';
export { APP_VERSION, REPO_ROOT } from './paths.js';

/** The bundled sample store, served through a working copy when CONSOLE_DATA_DIR is unset. */
export const SAMPLE_STORE_DIR = path.join(REPO_ROOT, 'sample-store');

/** `GET /api/config` schema version (spec: Versioning). */
export const CONFIG_SCHEMA_VERSION = 1;

/** Codes of start-up errors: they stop start-up and are never answered. */
export type MainErrorCode = 'config_invalid' | 'startup_guard_failed';

/** Thrown when an environment variable has a bad value (code `config_invalid`); the message names the variable. */
export class ConfigError extends ServiceError<'config_invalid'> {
  override name = 'ConfigError';
  constructor(message: string) {
    super('config_invalid', message);
  }
}

/** The resolved configuration. Paths are absolute; durations are milliseconds. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Engine store root read by the service and written by the dispatch tool. */
  readonly dataDir: string;
  /** When the data dir is the default working copy, the bundled store it is seeded from; else null. */
  readonly sampleSeedDir: string | null;
  /** The ops page's own files (src/ops-page/, served as they are, also by a built service). */
  readonly opsPageDir: string;
  /** Folder of the state database (`console-state.db`). */
  readonly stateDir: string;
  readonly stateDbPath: string;
  /** The dispatch tool file started as `<node> <dispatchCli> …`. */
  readonly dispatchCli: string;
  /** TTYD_HOST trimmed; null when unset or blank (spec: Service routes). */
  readonly ttydHost: string | null;
  /** SERVICE_WRITE_UPSTREAM (never with credentials), or null when mutations run locally. */
  readonly writeUpstream: string | null;
  /** CONSOLE_API_TOKEN, required by all routes but health, readiness, config and OpenAPI (api-decisions.md, "Network and safety defaults"); null: open. */
  readonly apiToken: string | null;
  /** Values never written to a log or message (secretsOf). */
  readonly secrets: readonly string[];
  /** Per-project web terminals (api-decisions.md, "Service routes with partial shape": Terminal). */
  readonly terminals: {
    /** TTYD_BIN: an absolute path, or a program name looked up on PATH at each start. */
    readonly bin: string;
    readonly command: readonly string[];
    /** CONSOLE_TTYD_PORTS, inclusive. */
    readonly portFirst: number;
    readonly portLast: number;
    readonly readyTimeoutMs: number;
  };
  readonly jobs: {
    /** Past it the generation routes answer 503. */
    readonly maxRunning: number;
    readonly retryAfterSeconds: number;
    readonly killGraceMs: number;
    readonly lineMaxBytes: number;
    readonly historySize: number;
    /** CONSOLE_JOB_NICE, 0..19; 0 leaves jobs at the service's. */
    readonly nice: number;
    /** CONSOLE_JOB_THREAD_NICE, 0..19: the job I/O thread's nice value; 0 leaves it at the main thread's. */
    readonly threadNice: number;
    /** CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB, 0..1024: the job I/O thread's young generation, MB; 0 leaves V8's default. */
    readonly threadYoungGenerationMb: number;
  };
  /** The service's own threads: the event writer and job I/O threads (a hang stops the service), the housekeeping and replay threads (replaced). */
  readonly threads: {
    /**
     * CONSOLE_THREAD_ANSWER_LIMIT_MS, 1000..3,600,000: a thread that leaves an append or a ping unanswered this long
     * (ms, counted in ticks of the main thread, so a pause of the process counts once) is taken for dead.
     */
    readonly answerLimitMs: number;
  };
  /** Managed child processes: jobs and terminals (src/process; ). */
  readonly processes: {
    readonly sweepMaxPasses: number;
    readonly sweepMaxMs: number;
  };
  readonly events: {
    readonly retention: number;
    /** Events published but not stored at which job output stops being read (backpressure); reading resumes at half. */
    readonly backlogMax: number;
    /** Least time between two bus flushes while events keep coming (0: every turn); the SQLite bus's only. */
    readonly flushIntervalMs: number;
    /** CONSOLE_EVENT_WRITER_THREAD_NICE, 0..19: the event writer thread's nice value (SQLite); 0 leaves it at the main thread's. */
    readonly writerThreadNice: number;
    /** CONSOLE_EVENT_APPEND_THREAD_NICE, 0..19: cluster mode's event append thread's nice value; 0 (the default) leaves it at the main thread's. */
    readonly appendThreadNice: number;
  };
  readonly sse: {
    readonly heartbeatMs: number;
    readonly maxQueueBytes: number;
    readonly retryMs: number;
    /** Newest events kept in memory for `Last-Event-ID` replays (0: none). */
    readonly replayMemoryBytes: number;
    /** Database replay pages kept for other streams' replays (0: none). */
    readonly replayCacheBytes: number;
    /** CONSOLE_SSE_REPLAY_THREAD_NICE, 0..19: the replay thread's nice value (SQLite); 0 leaves it at the main thread's. */
    readonly replayThreadNice: number;
    /** Bytes queued for all stream clients together; past it the most-queued clients are dropped as slow. */
    readonly totalQueueBytes: number;
    /** Open streams in all (also at most half the descriptor limit); past it, 503. */
    readonly maxStreams: number;
    /** Per remote address (0: no bound); past it, 429. */
    readonly maxStreamsPerAddress: number;
    /** Replays reading the state database at once; others wait. */
    readonly maxDatabaseReplays: number;
  };
  readonly workers: {
    readonly threads: number;
  };
  readonly cache: {
    readonly maxBytes: number;
  };
  readonly http: {
    readonly maxBodyBytes: number;
    /** How long an idle kept-alive connection stays open, ms (the server's keepAliveTimeout; announced in `Keep-Alive: timeout=`). */
    readonly keepAliveTimeoutMs: number;
  };
  /** How store files are read. */
  readonly store: {
    /** A larger store file is a 422, never read. */
    readonly fileMaxBytes: number;
    readonly jsonMaxDepth: number;
    /** Ceiling on one store read in the worker pool; past it, 503. */
    readonly readTimeoutMs: number;
    /** Inotify watch; off on a network share, where the kernel hears no other machine's writes. */
    readonly watch: boolean;
  };
  /** The console's recorded state (issue: console state). */
  readonly consoleState: {
    readonly clicksPerProject: number;
    readonly clicksMaxTotal: number;
    /** One corrupt workspace blob report's JSON size; past it, 413. */
    readonly workspaceReportMaxBytes: number;
  };
  readonly cors: {
    /** Exact origins allowed cross-origin (spec: Cross-cutting behaviour). */
    readonly origins: readonly string[];
  };
  /** CONSOLE_ALLOWED_HOSTS: `Host` values served besides loopback, canonical (canonicalHost), alone (any port) or with `:port`. */
  readonly allowedHosts: readonly string[];
  /** Cluster mode (cluster.md). */
  readonly cluster: {
    /** The PostgreSQL state store; null: the embedded SQLite database. */
    readonly databaseUrl: string | null;
    readonly connectTimeoutMs: number;
    /** Null: `<host name>:<port>`, known once the service listens. */
    readonly instanceId: string | null;
    readonly instanceTimeoutMs: number;
    readonly heldEventsMax: number;
    readonly storeRevalidateMs: number;
    /** Where other instances reach this one (the history route reads there); null: `http://<HOST>:<PORT>`. */
    readonly instanceUrl: string | null;
  };
  /** The in-memory history of the service's figures (src/metrics/history.ts). */
  readonly history: {
    readonly sampleMs: number;
  };
  /** MALLOC_ARENA_MAX as the process was started with (glibc's bound on its malloc arenas), null when unset; reported in the system status. */
  readonly mallocArenaMax: string | null;
  /** MALLOC_CONF as the process was started with (jemalloc's options, bin/console-backend), null when unset; reported in the system status. */
  readonly mallocConf: string | null;
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  readonly logLevel: LogLevel;
  /** LOG_FORMAT: `json` (one JSON object a line) or `pretty` (pino-pretty, for people). */
  readonly logFormat: LogFormat;
  /** Variables not at their default, as given (trimmed), secrets as `(set)`; listed in the start-up log line. */
  readonly nonDefault: Readonly<Record<string, string>>;
  /** Folder where every answer is recorded to check it against the OpenAPI document (tests); null: nothing runs per request. */
  readonly recordAnswersDir: string | null;
  /** The dispatch tool's and terminals' environment: the service's without {@link SERVICE_ONLY_VARIABLES} and the allocator variables bin/console-backend set (CONSOLE_LAUNCHER_SET), plus CONSOLE_DATA_DIR. */
  readonly childEnv: Readonly<Record<string, string>>;
}

/** Variables never handed to a child, whose environment any code it runs can read: secrets, and what only this service uses. */
export const SERVICE_ONLY_VARIABLES: readonly string[] = ['CONSOLE_API_TOKEN', 'SERVICE_WRITE_UPSTREAM', 'CONSOLE_RECORD_ANSWERS_DIR', 'CONSOLE_DATABASE_URL'];

const SECRET_VARIABLES: readonly string[] = ['CONSOLE_API_TOKEN', 'CONSOLE_DATABASE_URL'];

/** Secret values for the log scrubber: CONSOLE_API_TOKEN, and CONSOLE_DATABASE_URL's password and password-like parameters. */
export function secretsOf(env: NodeJS.ProcessEnv): string[] {
  const out: string[] = [];
  const token = env.CONSOLE_API_TOKEN?.trim();
  if (token) out.push(token);
  const url = env.CONSOLE_DATABASE_URL?.trim();
  if (url) {
    try {
      const u = new URL(url);
      out.push(decodeURIComponent(u.password));
      for (const [k, v] of u.searchParams) if (/pass|key|secret|token/i.test(k)) out.push(v);
    } catch {
      // Not a URL: start-up says so, without repeating it.
    }
  }
  return out.filter((x) => x.length > 0);
}

function nonDefaultSettings(env: NodeJS.ProcessEnv, parsed: Record<string, unknown>): Record<string, string> {
  const defaults = envSchema.parse({}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const name of Object.keys(envSchema.shape)) {
    const given = env[name];
    if (given === undefined || given.trim() === '' || JSON.stringify(parsed[name]) === JSON.stringify(defaults[name])) continue;
    out[name] = SECRET_VARIABLES.includes(name) ? '(set)' : given.trim();
  }
  return out;
}

/**
 * Parses the configuration from `env` (normally `process.env`; unknown names ignored), relative paths against `cwd`.
 * @throws ConfigError naming every variable with a bad value.
 */
export function readConfig(env: NodeJS.ProcessEnv, cwd: string = process.cwd()): Config {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `${String(i.path[0])}: ${i.message}`);
    throw new ConfigError(`invalid configuration:\n  ${lines.join('\n  ')}`);
  }
  const e = parsed.data;
  const abs = (p: string) => path.resolve(cwd, p);
  const stateDir = e.CONSOLE_STATE_DIR ? abs(e.CONSOLE_STATE_DIR) : path.join(REPO_ROOT, 'var');
  const dataDir = e.CONSOLE_DATA_DIR ? abs(e.CONSOLE_DATA_DIR) : path.join(stateDir, 'sample-store');
  const ttydHost = e.TTYD_HOST?.trim() ? e.TTYD_HOST.trim() : null;
  const hosts = ['localhost', '127.0.0.1', ...e.CONSOLE_CORS_DEV_HOSTS];
  const origins = hosts.flatMap((h) => e.CONSOLE_CORS_PORTS.map((p) => `http://${h}:${p}`));

  // The allocator the launcher chose is the service's: a job or terminal runs with what the operator set.
  const withheld = [...SERVICE_ONLY_VARIABLES, 'CONSOLE_LAUNCHER_SET', ...e.CONSOLE_LAUNCHER_SET];
  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !withheld.includes(k)) childEnv[k] = v;
  childEnv.CONSOLE_DATA_DIR = dataDir;

  return deepFreeze({
    port: e.PORT,
    host: e.HOST,
    dataDir,
    sampleSeedDir: e.CONSOLE_DATA_DIR ? null : SAMPLE_STORE_DIR,
    opsPageDir: path.join(REPO_ROOT, 'src', 'ops-page'),
    stateDir,
    stateDbPath: path.join(stateDir, 'console-state.db'),
    dispatchCli: e.DISPATCH_CLI ? abs(e.DISPATCH_CLI) : path.join(REPO_ROOT, 'dist', 'dispatch', 'cli.js'),
    ttydHost,
    writeUpstream: e.SERVICE_WRITE_UPSTREAM ?? null,
    apiToken: e.CONSOLE_API_TOKEN ? e.CONSOLE_API_TOKEN : null,
    secrets: secretsOf(env),
    terminals: {
      bin: e.TTYD_BIN.includes('/') ? abs(e.TTYD_BIN) : e.TTYD_BIN,
      command: e.TTYD_COMMAND,
      portFirst: e.CONSOLE_TTYD_PORTS.first,
      portLast: e.CONSOLE_TTYD_PORTS.last,
      readyTimeoutMs: e.CONSOLE_TTYD_READY_MS,
    },
    jobs: {
      maxRunning: e.CONSOLE_MAX_RUNNING_JOBS,
      retryAfterSeconds: e.CONSOLE_RETRY_AFTER_SECONDS,
      killGraceMs: e.CONSOLE_KILL_GRACE_MS,
      lineMaxBytes: e.CONSOLE_LINE_MAX_BYTES,
      historySize: e.CONSOLE_JOB_HISTORY,
      nice: e.CONSOLE_JOB_NICE,
      threadNice: e.CONSOLE_JOB_THREAD_NICE,
      threadYoungGenerationMb: e.CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB,
    },
    threads: { answerLimitMs: e.CONSOLE_THREAD_ANSWER_LIMIT_MS },
    processes: { sweepMaxPasses: e.CONSOLE_SWEEP_MAX_PASSES, sweepMaxMs: e.CONSOLE_SWEEP_MAX_MS },
    events: {
      retention: e.CONSOLE_EVENT_RETENTION,
      backlogMax: e.CONSOLE_EVENT_BACKLOG_MAX,
      flushIntervalMs: e.CONSOLE_EVENT_FLUSH_INTERVAL_MS,
      writerThreadNice: e.CONSOLE_EVENT_WRITER_THREAD_NICE,
      appendThreadNice: e.CONSOLE_EVENT_APPEND_THREAD_NICE,
    },
    sse: {
      heartbeatMs: e.CONSOLE_SSE_HEARTBEAT_MS,
      maxQueueBytes: e.CONSOLE_SSE_MAX_QUEUE_BYTES,
      retryMs: e.CONSOLE_SSE_RETRY_MS,
      totalQueueBytes: e.CONSOLE_SSE_TOTAL_QUEUE_BYTES,
      maxStreams: e.CONSOLE_SSE_MAX_STREAMS,
      maxStreamsPerAddress: e.CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS,
      maxDatabaseReplays: e.CONSOLE_SSE_MAX_DATABASE_REPLAYS,
      replayMemoryBytes: e.CONSOLE_SSE_REPLAY_MEMORY_BYTES,
      replayCacheBytes: e.CONSOLE_SSE_REPLAY_CACHE_BYTES,
      replayThreadNice: e.CONSOLE_SSE_REPLAY_THREAD_NICE,
    },
    workers: { threads: e.CONSOLE_WORKER_THREADS },
    cache: { maxBytes: e.CONSOLE_CACHE_MAX_BYTES },
    http: { maxBodyBytes: e.CONSOLE_MAX_BODY_BYTES, keepAliveTimeoutMs: e.CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS },
    store: {
      fileMaxBytes: e.CONSOLE_STORE_FILE_MAX_BYTES,
      jsonMaxDepth: e.CONSOLE_STORE_JSON_MAX_DEPTH,
      readTimeoutMs: e.CONSOLE_STORE_READ_TIMEOUT_MS,
      watch: e.CONSOLE_STORE_WATCH === 'on',
    },
    consoleState: {
      clicksPerProject: e.CONSOLE_CLICKS_PER_PROJECT,
      clicksMaxTotal: e.CONSOLE_CLICKS_MAX_TOTAL,
      workspaceReportMaxBytes: e.CONSOLE_WORKSPACE_REPORT_MAX_BYTES,
    },
    cluster: {
      databaseUrl: e.CONSOLE_DATABASE_URL ? e.CONSOLE_DATABASE_URL : null,
      connectTimeoutMs: e.CONSOLE_DATABASE_CONNECT_TIMEOUT_MS,
      instanceId: e.CONSOLE_INSTANCE_ID ? e.CONSOLE_INSTANCE_ID : null,
      instanceTimeoutMs: e.CONSOLE_INSTANCE_TIMEOUT_MS,
      heldEventsMax: e.CONSOLE_HELD_EVENTS_MAX,
      storeRevalidateMs: e.CONSOLE_STORE_REVALIDATE_MS,
      instanceUrl: e.CONSOLE_INSTANCE_URL ?? null,
    },
    history: { sampleMs: e.CONSOLE_HISTORY_SAMPLE_MS },
    cors: { origins },
    allowedHosts: e.CONSOLE_ALLOWED_HOSTS,
    mallocArenaMax: e.MALLOC_ARENA_MAX || null,
    mallocConf: e.MALLOC_CONF || null,
    logLevel: e.LOG_LEVEL,
    logFormat: e.LOG_FORMAT,
    nonDefault: nonDefaultSettings(env, e),
    recordAnswersDir: e.CONSOLE_RECORD_ANSWERS_DIR ? abs(e.CONSOLE_RECORD_ANSWERS_DIR) : null,
    childEnv,
  });
}

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object') {
    for (const v of Object.values(o)) deepFreeze(v);
    Object.freeze(o);
  }
  return o;
}
