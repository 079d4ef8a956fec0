// Every environment variable the service reads, with its default and its zod check; README's configuration table documents them.
import net from 'node:net';
import os from 'node:os';
import { z } from 'zod';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** LOG_FORMAT: JSON lines for machines (the default), or pino-pretty's lines for people. */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

const int = (min: number, max: number) =>
  z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'expected an integer')
    .transform(Number)
    .pipe(z.number().int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));

const nonEmpty = z.string().trim().min(1, 'must not be empty');

const hostName = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9.-]+$/, 'expected host names (letters, digits, dots, hyphens)');

const splitCsv = (s: string) =>
  s
    .split(',')
    .map((x) => x.trim())
    .filter((x) => x.length > 0);

/** An http(s) URL without credentials, trailing slash dropped; blank means unset (undefined), as for TTYD_HOST. */
const url = z
  .string()
  .trim()
  .transform((s, ctx) => {
    if (s === '') return undefined;
    let u: URL;
    try {
      u = new URL(s);
      if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new Error('scheme');
    } catch {
      ctx.addIssue({ code: 'custom', message: 'expected an http(s) URL' });
      return z.NEVER;
    }
    // The proxy would not send them, and the URL is shown in the system status, logs and 502 details.
    if (u.username !== '' || u.password !== '') {
      ctx.addIssue({ code: 'custom', message: 'expected an http(s) URL without credentials (user:password@)' });
      return z.NEVER;
    }
    return u.toString().replace(/\/$/, '');
  });

/** One CONSOLE_ALLOWED_HOSTS entry (host name, IPv4 or [IPv6], optional `:port`) in canonical form; null if not a host. */
export function canonicalHost(entry: string): { host: string; port: number | null } | null {
  // No userinfo, path or %-encoding (the URL parser would strip or decode them); `_` for container network names.
  const m = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(\d{1,5}))?$/.exec(entry);
  if (!m) return null;
  const port = m[2] === undefined ? null : Number(m[2]);
  if (port !== null && port > 65535) return null;
  let host: string;
  try {
    // The WHATWG parser gives the form a browser puts in Host (lower case, dotted IPv4, compressed IPv6).
    host = new URL(`http://${m[1] as string}/`).hostname;
  } catch {
    return null;
  }
  if (host.endsWith('.')) host = host.slice(0, -1); // `localhost.` is `localhost`
  if (host === '' || host.endsWith('.') || (host.startsWith('[') && !net.isIPv6(host.slice(1, -1)))) return null;
  return { host, port };
}

function parseAllowedHosts(s: string, ctx: z.RefinementCtx): string[] {
  const out: string[] = [];
  for (const entry of splitCsv(s)) {
    const h = canonicalHost(entry);
    if (h === null) {
      ctx.addIssue({ code: 'custom', message: `"${entry}" is not a host name, IPv4 address or [IPv6] address with an optional :port` });
      return z.NEVER;
    }
    out.push(h.port === null ? h.host : `${h.host}:${h.port}`);
  }
  return out;
}

/** TTYD_COMMAND: a JSON array of strings, or words split on white space (no quoting: no shell runs it). */
function parseCommand(s: string, ctx: z.RefinementCtx): string[] {
  if (s.startsWith('[')) {
    try {
      const v: unknown = JSON.parse(s);
      if (Array.isArray(v) && v.length > 0 && v.every((x) => typeof x === 'string' && x.length > 0)) return v as string[];
    } catch {
      // reported below
    }
    ctx.addIssue({ code: 'custom', message: 'expected a JSON array of non-empty strings, or words separated by spaces' });
    return z.NEVER;
  }
  return s.split(/\s+/).filter((w) => w.length > 0);
}

/** CONSOLE_TTYD_PORTS: `first-last` (inclusive) or a single port. */
function parsePortRange(s: string, ctx: z.RefinementCtx): { first: number; last: number } {
  const m = /^(\d{1,5})(?:\s*-\s*(\d{1,5}))?$/.exec(s);
  const first = m ? Number(m[1]) : NaN;
  const last = m ? Number(m[2] ?? m[1]) : NaN;
  if (!(first >= 1 && last <= 65535 && first <= last)) {
    ctx.addIssue({ code: 'custom', message: 'expected a port range "first-last" within 1-65535, first <= last' });
    return z.NEVER;
  }
  return { first, last };
}

const defaultThreads = Math.max(1, Math.min(4, os.availableParallelism() - 1));

/** The variables bin/console-backend may set for the allocator (CONSOLE_LAUNCHER_SET names those it did). */
export const LAUNCHER_VARIABLES: readonly string[] = ['LD_PRELOAD', 'MALLOC_CONF', 'MALLOC_ARENA_MAX'];

/** Every variable the service reads, with its default. */
export const envSchema = z.object({
  PORT: int(0, 65535).default(8431),
  HOST: nonEmpty.default('127.0.0.1'),
  CONSOLE_DATA_DIR: nonEmpty.optional(),
  CONSOLE_STATE_DIR: nonEmpty.optional(),
  DISPATCH_CLI: nonEmpty.optional(),
  TTYD_HOST: z.string().optional(),
  TTYD_BIN: nonEmpty.default('ttyd'),
  TTYD_COMMAND: nonEmpty.default('bash').transform((s, ctx) => parseCommand(s, ctx)),
  CONSOLE_TTYD_PORTS: z
    .string()
    .trim()
    .default('7681-7699')
    .transform((s, ctx) => parsePortRange(s, ctx)),
  CONSOLE_TTYD_READY_MS: int(0, 600_000).default(10_000),
  SERVICE_WRITE_UPSTREAM: url.optional(),
  // RFC 6750 b64token syntax, so the token can travel in an Authorization header unchanged.
  CONSOLE_API_TOKEN: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9._~+/-]+=*)?$/, 'expected a bearer token (letters, digits and - . _ ~ + / then optional =)')
    .optional(),
  CONSOLE_MAX_RUNNING_JOBS: int(1, 4096).default(64),
  CONSOLE_RETRY_AFTER_SECONDS: int(1, 3600).default(2),
  CONSOLE_KILL_GRACE_MS: int(0, 600_000).default(5000),
  CONSOLE_LINE_MAX_BYTES: int(256, 8 * 1024 * 1024).default(16 * 1024),
  CONSOLE_JOB_HISTORY: int(1, 10_000_000).default(10_000),
  // Jobs below the service: a storm of them must not take the CPU the console's answers need.
  CONSOLE_JOB_NICE: int(0, 19).default(19),
  // The job I/O thread below the main thread: when the two compete for a CPU, the main thread goes first.
  CONSOLE_JOB_THREAD_NICE: int(0, 19).default(5),
  // The job I/O thread's objects live milliseconds: a small young generation keeps a storm's peak out of the RSS (P6).
  CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: int(0, 1024).default(8),
  // A thread of the service that answers nothing for this long is taken for dead (README, Threads).
  CONSOLE_THREAD_ANSWER_LIMIT_MS: int(1000, 3_600_000).default(60_000),
  CONSOLE_SWEEP_MAX_PASSES: int(1, 100_000).default(100),
  CONSOLE_SWEEP_MAX_MS: int(0, 600_000).default(5000),
  CONSOLE_EVENT_RETENTION: int(100, 100_000_000).default(200_000),
  // Below the 100,000 events the bus holds at most while stores fail (past those it drops).
  CONSOLE_EVENT_BACKLOG_MAX: int(1000, 50_000).default(10_000),
  // Batches events: a flush costs a transaction and a write per stream client.
  CONSOLE_EVENT_FLUSH_INTERVAL_MS: int(0, 1000).default(5),
  // The event writer thread below the main thread, as the job I/O thread: storing a storm's lines goes after the console.
  CONSOLE_EVENT_WRITER_THREAD_NICE: int(0, 19).default(5),
  // Cluster mode's event append thread: its CPU is small (PostgreSQL stores), and lowered it slowed every append on a
  // busy machine (bench C1): it runs at the main thread's by default.
  CONSOLE_EVENT_APPEND_THREAD_NICE: int(0, 19).default(0),
  CONSOLE_SSE_HEARTBEAT_MS: int(50, 15_000).default(15_000),
  CONSOLE_SSE_MAX_QUEUE_BYTES: int(64 * 1024, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
  CONSOLE_SSE_REPLAY_MEMORY_BYTES: int(0, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
  CONSOLE_SSE_REPLAY_CACHE_BYTES: int(0, 1024 * 1024 * 1024).default(8 * 1024 * 1024),
  // The replay thread below the main thread, as the job I/O thread: a storm's replays must not slow its publishing.
  CONSOLE_SSE_REPLAY_THREAD_NICE: int(0, 19).default(5),
  CONSOLE_SSE_RETRY_MS: int(100, 600_000).default(2000),
  CONSOLE_SSE_TOTAL_QUEUE_BYTES: int(1024 * 1024, 16 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  CONSOLE_SSE_MAX_STREAMS: int(1, 1_000_000).default(1000),
  CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS: int(0, 1_000_000).default(200),
  CONSOLE_SSE_MAX_DATABASE_REPLAYS: int(1, 1000).default(4),
  CONSOLE_WORKER_THREADS: int(1, 64).default(defaultThreads),
  CONSOLE_CACHE_MAX_BYTES: int(0, 8 * 1024 * 1024 * 1024).default(64 * 1024 * 1024),
  // Node's default (5 s) is shorter than most proxies' and load balancers' idle time-outs: one reusing a connection the
  // service is closing gets a reset (a 502 to its client). Set it above theirs.
  CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: int(1000, 3_600_000).default(5000),
  CONSOLE_MAX_BODY_BYTES: int(1024, 256 * 1024 * 1024).default(1024 * 1024),
  // A few MB: the largest real entity files are some KB; a file past this is refused before it is read.
  CONSOLE_STORE_FILE_MAX_BYTES: int(1024, 1024 * 1024 * 1024).default(4 * 1024 * 1024),
  // At most 1000: answers are serialised recursively (JSON.stringify, postMessage) after the check.
  CONSOLE_STORE_JSON_MAX_DEPTH: int(2, 1000).default(64),
  CONSOLE_STORE_READ_TIMEOUT_MS: int(1, 600_000).default(30_000),
  CONSOLE_STORE_WATCH: z.enum(['on', 'off']).default('on'),
  CONSOLE_CLICKS_PER_PROJECT: int(1, 10_000_000).default(1000),
  CONSOLE_CLICKS_MAX_TOTAL: int(1, 1_000_000_000).default(1_000_000),
  CONSOLE_WORKSPACE_REPORT_MAX_BYTES: int(1024, 256 * 1024 * 1024).default(256 * 1024),
  CONSOLE_CORS_DEV_HOSTS: z.string().transform(splitCsv).pipe(z.array(hostName)).default([]),
  CONSOLE_CORS_PORTS: z
    .string()
    .transform(splitCsv)
    .pipe(z.array(int(1, 65535)))
    .default([5173, 5174, 5175]),
  CONSOLE_ALLOWED_HOSTS: z
    .string()
    .transform((s, ctx) => parseAllowedHosts(s, ctx))
    .default([]),
  // Blank means unset; the URL itself is checked when the store opens, with a message naming it.
  CONSOLE_DATABASE_URL: z.string().trim().optional(),
  CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: int(0, 600_000).default(10_000),
  CONSOLE_INSTANCE_ID: z
    .string()
    .trim()
    .regex(/^([A-Za-z0-9][A-Za-z0-9._:@-]{0,127})?$/, 'expected 1-128 letters, digits and . _ : @ - (starting with a letter or digit)')
    .optional(),
  CONSOLE_INSTANCE_TIMEOUT_MS: int(2000, 3_600_000).default(10_000),
  CONSOLE_HELD_EVENTS_MAX: int(1000, 100_000_000).default(100_000),
  CONSOLE_STORE_REVALIDATE_MS: int(100, 3_600_000).default(2000),
  CONSOLE_INSTANCE_URL: url.optional(),
  // At 100 ms the 15-minute window is still only about 1 MB.
  CONSOLE_HISTORY_SAMPLE_MS: int(100, 60_000).default(5000),
  // glibc's, read by the C library at the process's start: reported, never applied here (npm start sets 2).
  MALLOC_ARENA_MAX: z.string().trim().optional(),
  // jemalloc's options, read by jemalloc at start when it is preloaded (bin/console-backend): reported only.
  MALLOC_CONF: z.string().trim().optional(),
  // Set by bin/console-backend: the allocator variables it set itself (never handed to a job or terminal).
  CONSOLE_LAUNCHER_SET: z
    .string()
    .trim()
    .optional()
    .transform((s) => (s ? s.split(/\s+/).filter((n) => LAUNCHER_VARIABLES.includes(n)) : [])),
  LOG_LEVEL: z.enum(LOG_LEVELS).default('info'),
  LOG_FORMAT: z.enum(LOG_FORMATS).default('json'),
  CONSOLE_RECORD_ANSWERS_DIR: z.string().trim().optional(),
});
