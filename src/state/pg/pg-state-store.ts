// The PostgreSQL back end of the state store (cluster.md), shared by every instance through a node-postgres pool.
import pg from 'pg';
import { StateDbError } from '../errors.js';
import type { StateRepos, StateStore, StateTx } from '../state-store.js';
import { pgDecisions, pgFallbacks, pgMemoryToggles, pgProposals, pgTakeStates } from './console-repos.js';
import { pgEvents, pruneEvents } from './event-repo.js';
import { poolExec, runTransaction, type Exec } from './exec.js';
import { pgInstances, pgJobs, pgTerminals } from './job-repos.js';
import { pgClicks, pgSelection, pgWorkspace, trimClicks } from './record-repos.js';
import { migrateSchema, PG_MIGRATIONS } from './schema.js';

/** Where the database is and the bounds of the store. */
export interface PgStateStoreOptions {
  /** CONSOLE_DATABASE_URL. */
  readonly url: string;
  /** CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: how long opening waits for an unreachable server. */
  readonly connectTimeoutMs: number;
  /** Default 10. */
  readonly poolSize?: number;
  /** CONSOLE_EVENT_RETENTION. */
  readonly eventRetention: number;
  /** CONSOLE_CLICKS_PER_PROJECT. */
  readonly clicksPerProject: number;
  /** CONSOLE_CLICKS_MAX_TOTAL. */
  readonly clicksMaxTotal: number;
  /** Corrupt-blob reports kept per workspace id. */
  readonly workspaceReportsKept: number;
  /** Told of idle pooled connections' errors (server restart); without a listener node-postgres would end the process. */
  readonly onPoolError?: (err: Error) => void;
  /** The schema's migrations (tests give their own); default PG_MIGRATIONS. */
  readonly migrations?: readonly string[];
  /** Bounds every pooled session sets, ms, so no instance can stall another (cluster.md, "Under faults"). */
  readonly sessionBounds?: SessionBounds;
}

/** The pool's per-session bounds, ms. */
export interface SessionBounds {
  readonly lockTimeoutMs: number;
  readonly idleInTransactionTimeoutMs: number;
  readonly statementTimeoutMs: number;
}

/** Session bounds for an instance timeout: lock waits and idle transactions end within half of it, so a stalled
 * peer costs less than judging it dead; statements get 30 s or three timeouts, to stop only runaways. */
export function sessionBoundsFor(instanceTimeoutMs: number): SessionBounds {
  const half = Math.max(1000, Math.floor(instanceTimeoutMs / 2));
  return { lockTimeoutMs: half, idleInTransactionTimeoutMs: half, statementTimeoutMs: Math.max(30_000, 3 * instanceTimeoutMs) };
}

/** SQLSTATEs of a connection that will not succeed by waiting: bad password or role, no such database. */
const PERMANENT = new Set(['28P01', '28000', '3D000', '42501']);

/** int8 (counts, bigserial ids, event ids) as numbers: they stay far below 2^53. */
const types = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === pg.types.builtins.INT8 ? (v: string) => Number(v) : pg.types.getTypeParser(oid, format ?? 'text')) as typeof pg.types.getTypeParser,
};

/**
 * A pool's configuration: `max` connections to `url`, each waiting `connectTimeoutMs` at most to connect, with the
 * session `bounds`, int8 read as numbers and TCP keepalive; `applicationName`, when given, names its sessions in
 * pg_stat_activity.
 * Used by the store's pool and by the event append thread's (append-thread.ts).
 */
export function pgPoolConfig(url: string, connectTimeoutMs: number, bounds: SessionBounds, max: number, applicationName?: string): pg.PoolConfig {
  return {
    connectionString: url,
    max,
    connectionTimeoutMillis: Math.max(1, connectTimeoutMs),
    types,
    // A name in the URL (`?application_name=`) wins.
    ...(applicationName !== undefined ? { application_name: applicationName } : {}),
    // A vanished peer (machine down, cable cut) is found by the kernel's probes instead of hanging a query for hours.
    keepAlive: true,
    keepAliveInitialDelayMillis: 5000,
    options: `-c lock_timeout=${bounds.lockTimeoutMs} -c idle_in_transaction_session_timeout=${bounds.idleInTransactionTimeoutMs} -c statement_timeout=${bounds.statementTimeoutMs}`,
  };
}

/**
 * Opens the PostgreSQL state store: connects (waiting for a starting server up to `connectTimeoutMs`), migrates
 * under an advisory lock (schema.ts), applies the bounds.
 * @throws StateDbError (`state_db_open_failed`) naming the database (no credential) and the cause.
 */
export async function openPgStateStore(opts: PgStateStoreOptions): Promise<PgStateStore> {
  const where = `CONSOLE_DATABASE_URL (${describeDatabaseUrl(opts.url)})`;
  let url: URL;
  try {
    url = new URL(opts.url);
  } catch (err) {
    throw new StateDbError(`cannot open the PostgreSQL state database (${where}): not a URL`, { cause: err });
  }
  if (url.protocol !== 'postgres:' && url.protocol !== 'postgresql:') {
    throw new StateDbError(`cannot open the PostgreSQL state database (${where}): the URL must start with postgres:// or postgresql://`);
  }
  const bounds = opts.sessionBounds ?? sessionBoundsFor(10_000);
  const pool = new pg.Pool(pgPoolConfig(opts.url, opts.connectTimeoutMs, bounds, opts.poolSize ?? 10));
  pool.on('error', (err) => opts.onPoolError?.(err));
  try {
    const client = await connectWithin(pool, opts.connectTimeoutMs, where);
    // Checked out, the client's connection errors are ours to listen to (see exec.ts).
    let broken: Error | undefined;
    const onError = (err: Error) => void (broken = err);
    client.on('error', onError);
    let version: number;
    try {
      version = await migrateSchema(client, opts.migrations ?? PG_MIGRATIONS);
    } finally {
      client.off('error', onError);
      client.release(broken);
    }
    const store = new PgStateStore(pool, opts, version, bounds);
    // A bound lowered since the last start applies now, before the first request.
    const x = poolExec(pool);
    await trimClicks(x, opts.clicksMaxTotal);
    await pruneEvents(x, (await store.events.lastId()) - opts.eventRetention);
    return store;
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (err instanceof StateDbError) throw err;
    throw new StateDbError(`cannot open the PostgreSQL state database (${where}): ${(err as Error).message}`, { cause: err });
  }
}

/** A connected client, retrying while the server cannot be reached, until `timeoutMs`. */
async function connectWithin(pool: pg.Pool, timeoutMs: number, where: string): Promise<pg.PoolClient> {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      return await pool.connect();
    } catch (err) {
      const code = String((err as { code?: unknown }).code ?? '');
      const msg = (err as Error).message;
      if (PERMANENT.has(code)) throw new StateDbError(`cannot open the PostgreSQL state database (${where}): ${msg} (${code})`, { cause: err });
      if (Date.now() >= deadline) {
        throw new StateDbError(`cannot open the PostgreSQL state database (${where}): still unreachable after ${timeoutMs} ms: ${msg}${code ? ` (${code})` : ''}`, {
          cause: err,
        });
      }
      await new Promise((r) => setTimeout(r, Math.min(1000, 100 * 2 ** attempt, Math.max(0, deadline - Date.now()))));
    }
  }
}

/** `host:port/database` of a URL, for messages and logs: a URL carries credentials beyond its password (`?sslkey=`…). */
export function describeDatabaseUrl(raw: string): string {
  try {
    const u = new URL(raw);
    const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
    return `${u.hostname || 'localhost'}:${u.port || '5432'}/${database}`;
  } catch {
    return '(not a URL)';
  }
}

/** The repositories over one way of running statements. */
function reposOver(x: Exec, pool: Exec, opts: PgStateStoreOptions): StateRepos {
  return {
    proposals: pgProposals(x),
    decisions: pgDecisions(x),
    fallbacks: pgFallbacks(x),
    memoryToggles: pgMemoryToggles(x),
    takeStates: pgTakeStates(x),
    clicks: pgClicks(x, opts.clicksPerProject, opts.clicksMaxTotal),
    workspace: pgWorkspace(x, opts.workspaceReportsKept),
    selection: pgSelection(x),
    jobs: pgJobs(x),
    events: pgEvents(x, pool, opts.eventRetention),
    instances: pgInstances(x),
    terminals: pgTerminals(x),
  };
}

/** The state store on a PostgreSQL database shared by the instances of a cluster. */
export class PgStateStore implements StateStore {
  readonly backend = 'postgres' as const;
  readonly proposals;
  readonly decisions;
  readonly fallbacks;
  readonly memoryToggles;
  readonly takeStates;
  readonly clicks;
  readonly workspace;
  readonly selection;
  readonly jobs;
  readonly events;
  readonly instances;
  readonly terminals;
  private readonly exec: Exec;

  /** Use {@link openPgStateStore}: the schema must be migrated. */
  constructor(
    private readonly pool: pg.Pool,
    private readonly opts: PgStateStoreOptions,
    readonly schemaVersion: number,
    /** The bounds every session of the pool sets (system status). */
    readonly sessionBounds: SessionBounds = sessionBoundsFor(10_000),
  ) {
    this.exec = poolExec(pool);
    const repos = reposOver(this.exec, this.exec, opts);
    this.proposals = repos.proposals;
    this.decisions = repos.decisions;
    this.fallbacks = repos.fallbacks;
    this.memoryToggles = repos.memoryToggles;
    this.takeStates = repos.takeStates;
    this.clicks = repos.clicks;
    this.workspace = repos.workspace;
    this.selection = repos.selection;
    this.jobs = repos.jobs;
    this.events = repos.events;
    this.instances = repos.instances;
    this.terminals = repos.terminals;
  }

  /** @inheritdoc On one pooled connection, at PostgreSQL's default isolation (read committed). */
  transaction<T>(fn: (tx: StateTx) => Promise<T>): Promise<T> {
    return runTransaction(this.pool, (x) => fn(reposOver(x, this.exec, this.opts)));
  }

  /** Notifies every instance listening on `channel` (listener.ts). @throws StateDbError when the database is away. */
  async notify(channel: string, payload: string): Promise<void> {
    await this.exec.q('SELECT pg_notify($1, $2)', [channel, payload]);
  }

  /** Resolves once the database answers a query (readiness); rejects with its error. */
  async ping(): Promise<void> {
    await this.exec.q('SELECT 1');
  }

  /** @inheritdoc Ends the pool once its connections are idle. */
  async close(): Promise<void> {
    await this.pool.end();
  }
}
