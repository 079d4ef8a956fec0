/**
 * Readiness (issue 14, item 3; cluster.md, "When the database is away"): whether this instance
 * can do its work now, as a list of named checks a balancer polls through `GET /api/ready`.
 * `GET /api/health` says the process is alive; this says what it needs is there: the store
 * folder can be read, the dispatch tool file exists, the state database takes writes, and the
 * worker pool has threads. Each check is cheap enough to run every second: an access() and a
 * stat of a file, a lock taken and released on the database, counters of the pool; no scan of
 * the store.
 */
import fs from 'node:fs';
import type { Bus } from '../bus/bus.js';
import type { Db } from '../state/db.js';
import type { PoolStats } from '../workers/pool.js';

/** The names of the checks, in the order they are listed. */
export const READINESS_CHECKS = ['store', 'dispatchTool', 'stateDatabase', 'workers'] as const;
export type ReadinessCheckName = (typeof READINESS_CHECKS)[number];

/** One check: `detail` says what was found (what is wrong, when `ok` is false). */
export interface ReadinessCheck {
  readonly name: ReadinessCheckName;
  readonly ok: boolean;
  readonly detail: string;
}

/** `GET /api/ready`'s answer: ready when every check is ok. */
export interface ReadinessReport {
  readonly ready: boolean;
  readonly checks: readonly ReadinessCheck[];
}

/** What the checks look at, wired by the composition root (service.ts). */
export interface ReadinessSources {
  /** CONSOLE_DATA_DIR. */
  readonly dataDir: string;
  /** DISPATCH_CLI. */
  readonly dispatchCli: string;
  /** The state database's check: {@link checkSqlite}, or cluster mode's (the database answers). */
  readonly stateDatabase: () => ReadinessCheck | Promise<ReadinessCheck>;
  readonly poolStats: () => PoolStats;
}

export class Readiness {
  constructor(private readonly sources: ReadinessSources) {}

  /** Runs every check (never throws). */
  async check(): Promise<ReadinessReport> {
    const s = this.sources;
    const checks: ReadinessCheck[] = [await checkStore(s.dataDir), await checkTool(s.dispatchCli), await s.stateDatabase(), checkWorkers(s.poolStats())];
    return { ready: checks.every((c) => c.ok), checks };
  }
}

/** The store root is a folder this process can list and read (CONSOLE_DATA_DIR). */
async function checkStore(dir: string): Promise<ReadinessCheck> {
  try {
    if (!(await fs.promises.stat(dir)).isDirectory()) return { name: 'store', ok: false, detail: `CONSOLE_DATA_DIR ${dir} is not a folder` };
    await fs.promises.access(dir, fs.constants.R_OK | fs.constants.X_OK);
    return { name: 'store', ok: true, detail: `${dir} is readable` };
  } catch (err) {
    return { name: 'store', ok: false, detail: `CONSOLE_DATA_DIR ${dir} ${why(err)}` };
  }
}

/** The dispatch tool file exists (spec: Generation, rule 3: else every generation request is a 500). */
async function checkTool(file: string): Promise<ReadinessCheck> {
  try {
    if (!(await fs.promises.stat(file)).isFile()) return { name: 'dispatchTool', ok: false, detail: `DISPATCH_CLI ${file} is not a file` };
    return { name: 'dispatchTool', ok: true, detail: `${file} exists` };
  } catch (err) {
    return { name: 'dispatchTool', ok: false, detail: `DISPATCH_CLI ${file} ${why(err)}` };
  }
}

/**
 * The state database takes writes: its write lock can be taken now (`BEGIN IMMEDIATE`, then
 * `ROLLBACK`: nothing is written; refused when another process holds the lock or the database
 * went read-only), and events are being stored (not held after a refused write: a full disk,
 * an I/O error). The lock is tried without waiting, so a poll never holds the event loop.
 */
/**
 * The embedded SQLite database's check: events are stored (`bus.storeOutage`), and the
 * database takes a write now (a write lock taken and given back at once).
 */
export function checkSqlite(db: Db, bus: Pick<Bus, 'storeOutage'>): ReadinessCheck {
  const outage = outageCheck(bus);
  if (outage) return outage;
  if (!db.open) return { name: 'stateDatabase', ok: false, detail: `${db.name} is closed` };
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

/** The worker pool (synthesis and every read of the store) has threads. */
/** A failing check while the bus cannot store events, else null. */
export function outageCheck(bus: Pick<Bus, 'storeOutage'>): ReadinessCheck | null {
  const outage = bus.storeOutage;
  return outage === null ? null : { name: 'stateDatabase', ok: false, detail: `events cannot be stored since ${outage.since} (${outage.held} held): ${outage.error}` };
}

function checkWorkers(stats: PoolStats): ReadinessCheck {
  const detail = `${stats.threads} of ${stats.maxThreads} worker threads up`;
  return { name: 'workers', ok: stats.threads > 0, detail };
}

function why(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return 'does not exist';
  if (code === 'EACCES' || code === 'EPERM') return 'cannot be read by this user (permission denied)';
  if (code === 'ENOTDIR') return 'is not reachable: a file stands where a folder of its path should be';
  return `cannot be read (${(err as Error)?.message ?? String(err)})`;
}
