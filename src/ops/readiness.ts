// Readiness (cluster.md, "When the database is away"): named checks a balancer polls through
// `GET /api/ready`, each cheap enough to run every second.
import fs from 'node:fs';

/** The worker pool's threads, as the pool counts them. */
export interface PoolThreads {
  readonly threads: number;
  readonly maxThreads: number;
}

/** Null, or since when the event bus cannot store its events (and why). */
export interface EventStorage {
  readonly storageOutage: { readonly since: string; readonly held: number; readonly error: string } | null;
}

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
  /** The state database's check, by its back end (src/main/sqlite-backend.ts, postgres-backend.ts). */
  readonly stateDatabase: () => ReadinessCheck | Promise<ReadinessCheck>;
  readonly poolStats: () => PoolThreads;
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

/** A failing check while the bus cannot store events, else null. */
export function outageCheck(bus: EventStorage): ReadinessCheck | null {
  const outage = bus.storageOutage;
  return outage === null ? null : { name: 'stateDatabase', ok: false, detail: `events cannot be stored since ${outage.since} (${outage.held} held): ${outage.error}` };
}

/** The worker pool (synthesis and every read of the store) has threads. */
function checkWorkers(stats: PoolThreads): ReadinessCheck {
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
