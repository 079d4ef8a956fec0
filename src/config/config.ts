/**
 * The service's configuration: the only module that reads environment variables
 * (style.md, practice 1). `readConfig` parses an environment object once with zod
 * and returns a deep-frozen {@link Config}; a bad value throws {@link ConfigError}
 * naming the variable, and start-up stops with that message.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ServiceError } from '../errors/index.js';
import { envSchema, type LogFormat, type LogLevel } from './env.js';
import { REPO_ROOT } from './paths.js';

export { canonicalHost, LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from './env.js';
export { APP_VERSION, REPO_ROOT } from './paths.js';

/** The bundled sample engine store, served (through a working copy) when CONSOLE_DATA_DIR is unset. */
export const SAMPLE_STORE_DIR = path.join(REPO_ROOT, 'sample-store');

/** `GET /api/config` schema version (spec: Versioning, item 2). */
export const CONFIG_SCHEMA_VERSION = 1;

/** The codes of start-up errors (src/main): they stop start-up and are never answered. */
export type MainErrorCode = 'config_invalid' | 'startup_guard_failed';

/** Thrown when an environment variable has a bad value (code `config_invalid`); the message names the variable. */
export class ConfigError extends ServiceError<'config_invalid'> {
  override name = 'ConfigError';
  constructor(message: string) {
    super('config_invalid', message);
  }
}

/** Fully resolved service configuration. All paths are absolute; all durations are milliseconds. */
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
  /** TTYD_HOST trimmed; null when unset or blank (spec: Service routes, `/api/config`). */
  readonly ttydHost: string | null;
  /** SERVICE_WRITE_UPSTREAM as a URL string (never with credentials), or null when mutations run locally. */
  readonly writeUpstream: string | null;
  /**
   * CONSOLE_API_TOKEN: the bearer token every route but health, readiness, config and the OpenAPI
   * document requires (api-decisions.md, "Network and safety defaults"); null (blank or
   * unset) leaves the API open.
   */
  readonly apiToken: string | null;
  /** Values never written to a log or a message: the token, the database URL's credentials (secretsOf). */
  readonly secrets: readonly string[];
  /** Per-project web terminals (api-decisions.md, "Service routes with partial shape": Terminal). */
  readonly terminals: {
    /** TTYD_BIN: an absolute path (when it named a path) or a program name looked up on PATH at each start. */
    readonly bin: string;
    /** TTYD_COMMAND as an argument list: the program (and its arguments) the terminal runs. */
    readonly command: readonly string[];
    /** CONSOLE_TTYD_PORTS: inclusive range of ports handed to terminals. */
    readonly portFirst: number;
    readonly portLast: number;
    /** Ceiling on the wait for a new terminal to accept connections before start answers. */
    readonly readyTimeoutMs: number;
  };
  readonly jobs: {
    /** Cap on concurrently running generation jobs; past it the generation routes answer 503. */
    readonly maxRunning: number;
    /** Seconds advertised in `Retry-After` on a 503 from the job cap. */
    readonly retryAfterSeconds: number;
    /** Time between SIGTERM and SIGKILL when a job is cancelled or the service stops. */
    readonly killGraceMs: number;
    /** Bound on one output line in bytes; longer lines are cut to it. */
    readonly lineMaxBytes: number;
    /** Finished jobs kept in the state database (and listed by `GET /api/jobs`). */
    readonly historySize: number;
    /** CONSOLE_JOB_NICE: nice value of every job (and of its autogroup), 0..19; 0 leaves them at the service's. */
    readonly nice: number;
  };
  /** Managed child processes: jobs and terminals (src/process; issue 10, item 5). */
  readonly processes: {
    /** Most kill passes of the sweep of what a job's or terminal's tree left running. */
    readonly sweepMaxPasses: number;
    /** Time after which that sweep starts no new pass, in ms. */
    readonly sweepMaxMs: number;
  };
  readonly events: {
    /** Number of newest events kept in the state database. */
    readonly retention: number;
    /**
     * CONSOLE_EVENT_BACKLOG_MAX: events published and not yet stored at which the jobs' output
     * pipes are no longer read (backpressure, issue 12); reading resumes at half of it.
     */
    readonly backlogMax: number;
    /**
     * CONSOLE_EVENT_FLUSH_INTERVAL_MS: least time between two flushes of the bus (stores and
     * stream writes) while events keep coming, in ms; 0 flushes at the end of every turn.
     * The SQLite bus's only: cluster mode appends at the end of every turn.
     */
    readonly flushIntervalMs: number;
  };
  readonly sse: {
    readonly heartbeatMs: number;
    /** A client whose unsent bytes pass this bound is disconnected. */
    readonly maxQueueBytes: number;
    /** `retry:` hint sent first on every stream. */
    readonly retryMs: number;
    /** CONSOLE_SSE_REPLAY_MEMORY_BYTES: the newest events kept in memory for `Last-Event-ID` replays (0: none). */
    readonly replayMemoryBytes: number;
    /**
     * CONSOLE_SSE_TOTAL_QUEUE_BYTES: bytes queued for all stream clients together; past it the
     * clients with the most queued are dropped (as slow) until it holds.
     */
    readonly totalQueueBytes: number;
    /** CONSOLE_SSE_MAX_STREAMS: open streams in all (also bounded by half the descriptor limit); past it, 503. */
    readonly maxStreams: number;
    /** CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS: open streams of one remote address (0: no bound); past it, 429. */
    readonly maxStreamsPerAddress: number;
    /** CONSOLE_SSE_MAX_DATABASE_REPLAYS: replays reading the state database at once; others wait their turn. */
    readonly maxDatabaseReplays: number;
  };
  readonly workers: {
    readonly threads: number;
  };
  readonly cache: {
    /** Bound on the bytes of synthesised responses kept in memory. */
    readonly maxBytes: number;
  };
  readonly http: {
    /** Request bodies above this size answer 413. */
    readonly maxBodyBytes: number;
  };
  /** How store files are read (issue 10, items 2 and 3; src/engine/read-store-file.ts). */
  readonly store: {
    /** CONSOLE_STORE_FILE_MAX_BYTES: a store file (project, shot, take, memory entry) larger than this is a 422, never read. */
    readonly fileMaxBytes: number;
    /** CONSOLE_STORE_JSON_MAX_DEPTH: a store file nesting objects and arrays deeper than this is a 422. */
    readonly jsonMaxDepth: number;
    /** CONSOLE_STORE_READ_TIMEOUT_MS: ceiling on one read of the store in the worker pool; past it, 503. */
    readonly readTimeoutMs: number;
    /**
     * CONSOLE_STORE_WATCH: whether the store folder is watched (inotify). Off for a network share,
     * where the kernel hears no other machine's writes: the revalidation and the ends of jobs
     * (cluster mode: of every instance's) tell the cache instead.
     */
    readonly watch: boolean;
  };
  /** The console's recorded state (issue: console state). */
  readonly consoleState: {
    /** Clicks kept per project (ring buffer); the oldest are evicted past it. */
    readonly clicksPerProject: number;
    /** Clicks kept in all, every project together (issue 10, item 10); the oldest are dropped past it. */
    readonly clicksMaxTotal: number;
    /** Bound on the JSON size of one corrupt workspace blob report; past it, 413. */
    readonly workspaceReportMaxBytes: number;
  };
  readonly cors: {
    /** Exact origins allowed to call cross-origin (spec: Cross-cutting behaviour, item 1). */
    readonly origins: readonly string[];
  };
  /**
   * CONSOLE_ALLOWED_HOSTS (issue 10, item 9): `Host` values served besides the loopback names,
   * each a lower-case host name, IPv4 address or bracketed IPv6 address (canonical form, no
   * trailing dot), alone (any port) or with `:port` (that port only). Empty when unset.
   */
  readonly allowedHosts: readonly string[];
  /** Cluster mode (shared/design/cluster.md): several instances on one PostgreSQL. */
  readonly cluster: {
    /** CONSOLE_DATABASE_URL: the PostgreSQL state store; null (unset or blank): the embedded SQLite database. */
    readonly databaseUrl: string | null;
    /** CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: how long start-up waits for an unreachable server. */
    readonly connectTimeoutMs: number;
    /** CONSOLE_INSTANCE_ID; null: `<host name>:<port>`, known once the service listens. */
    readonly instanceId: string | null;
    /** CONSOLE_INSTANCE_TIMEOUT_MS: an instance whose heartbeat is older is dead. */
    readonly instanceTimeoutMs: number;
    /** CONSOLE_HELD_EVENTS_MAX: events held in memory while the database is away. */
    readonly heldEventsMax: number;
    /** CONSOLE_STORE_REVALIDATE_MS: how often the shared store folder is looked at for changes. */
    readonly storeRevalidateMs: number;
    /**
     * CONSOLE_INSTANCE_URL: where the other instances reach this one (its `address` in the
     * instances table; the history route reads each live instance's history there); null:
     * `http://<HOST>:<PORT>`.
     */
    readonly instanceUrl: string | null;
  };
  /** The in-memory history of the service's figures (src/metrics/history.ts). */
  readonly history: {
    /** CONSOLE_HISTORY_SAMPLE_MS: time between two samples; 15 minutes of them are kept. */
    readonly sampleMs: number;
  };
  /** pino level: fatal, error, warn, info, debug, trace or silent. */
  readonly logLevel: LogLevel;
  /** LOG_FORMAT: `json` (one JSON object a line) or `pretty` (pino-pretty, for people). */
  readonly logFormat: LogFormat;
  /**
   * The variables set to something else than their default, by name, as given (trimmed); a
   * secret's value is never kept (`(set)`). The start-up log line lists them (issue 14, item 5).
   */
  readonly nonDefault: Readonly<Record<string, string>>;
  /**
   * CONSOLE_RECORD_ANSWERS_DIR: a folder where every answer is recorded for checking against the
   * OpenAPI document (src/http/answer-recorder.ts; the test suite sets it); null (unset or
   * blank): nothing is recorded, and nothing runs per request for it.
   */
  readonly recordAnswersDir: string | null;
  /**
   * Environment of the dispatch tool and of terminals: the service's own, without
   * {@link SERVICE_ONLY_VARIABLES} (its token), plus CONSOLE_DATA_DIR.
   */
  readonly childEnv: Readonly<Record<string, string>>;
}

/**
 * Variables of the service never handed to a child (dispatch tool, terminal), whose
 * environment any code it runs can read (issue 10, item 8): its secret, CONSOLE_API_TOKEN, and
 * SERVICE_WRITE_UPSTREAM, which carries no credential (refused above) but means nothing to a
 * child and names where this service's writes go; CONSOLE_RECORD_ANSWERS_DIR, this service's
 * own recording of its answers.
 */
export const SERVICE_ONLY_VARIABLES: readonly string[] = ['CONSOLE_API_TOKEN', 'SERVICE_WRITE_UPSTREAM', 'CONSOLE_RECORD_ANSWERS_DIR', 'CONSOLE_DATABASE_URL'];

/** Variables whose value is never shown, not even in the start-up line. */
const SECRET_VARIABLES: readonly string[] = ['CONSOLE_API_TOKEN', 'CONSOLE_DATABASE_URL'];

/**
 * The secret values of an environment, for the log scrubber (written nowhere, whatever message
 * echoes them): CONSOLE_API_TOKEN, and the credentials of CONSOLE_DATABASE_URL (its password,
 * and the values of query parameters named like one: `password`, `passfile`, `sslkey`,
 * `sslpassword`…). Best effort on an environment that does not parse (start-up errors).
 */
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

/**
 * The variables of `env` whose parsed value differs from the default's, with the value as
 * given (trimmed), a secret's replaced by `(set)`.
 */
function nonDefaultSettings(env: NodeJS.ProcessEnv, parsed: Record<string, unknown>): Record<string, string> {
  const defaults = envSchema.parse({}) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const name of Object.keys(envSchema.shape)) {
    const given = env[name];
    // Blank means unset (TTYD_HOST, CONSOLE_API_TOKEN, SERVICE_WRITE_UPSTREAM).
    if (given === undefined || given.trim() === '' || JSON.stringify(parsed[name]) === JSON.stringify(defaults[name])) continue;
    out[name] = SECRET_VARIABLES.includes(name) ? '(set)' : given.trim();
  }
  return out;
}

/**
 * Parses the service configuration from an environment object (normally `process.env`).
 * @param env variables by name; unknown names are ignored.
 * @param cwd base for relative paths in the environment.
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

  const childEnv: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !SERVICE_ONLY_VARIABLES.includes(k)) childEnv[k] = v;
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
    },
    processes: { sweepMaxPasses: e.CONSOLE_SWEEP_MAX_PASSES, sweepMaxMs: e.CONSOLE_SWEEP_MAX_MS },
    events: { retention: e.CONSOLE_EVENT_RETENTION, backlogMax: e.CONSOLE_EVENT_BACKLOG_MAX, flushIntervalMs: e.CONSOLE_EVENT_FLUSH_INTERVAL_MS },
    sse: {
      heartbeatMs: e.CONSOLE_SSE_HEARTBEAT_MS,
      maxQueueBytes: e.CONSOLE_SSE_MAX_QUEUE_BYTES,
      retryMs: e.CONSOLE_SSE_RETRY_MS,
      totalQueueBytes: e.CONSOLE_SSE_TOTAL_QUEUE_BYTES,
      maxStreams: e.CONSOLE_SSE_MAX_STREAMS,
      maxStreamsPerAddress: e.CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS,
      maxDatabaseReplays: e.CONSOLE_SSE_MAX_DATABASE_REPLAYS,
      replayMemoryBytes: e.CONSOLE_SSE_REPLAY_MEMORY_BYTES,
    },
    workers: { threads: e.CONSOLE_WORKER_THREADS },
    cache: { maxBytes: e.CONSOLE_CACHE_MAX_BYTES },
    http: { maxBodyBytes: e.CONSOLE_MAX_BODY_BYTES },
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
