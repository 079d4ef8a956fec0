/**
 * What the fault-injection run (harness.ts) runs against: the instances, how each is started and
 * streamed from, and how its database fails.
 * - `cluster`: three instances on one real PostgreSQL (durable commits); the database stops at
 *   once (an immediate shutdown) and comes back.
 * - `sqlite`: one instance on its embedded SQLite state database, in a state folder on a tmpfs of
 *   its own; the database fails as the disk fills (every write refused, ENOSPC) and works again
 *   once the filler is removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCluster } from '../helpers/cluster.js';
import { canMount, fillDisk, mountTmpfs } from '../helpers/mounts.js';
import { fixture, SAMPLE_STORE } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';
import { SseClient } from '../helpers/sse.js';

/** The back ends a run can take. */
export type ChaosBackend = 'cluster' | 'sqlite';

/** The instances of a run and their database (see the module's comment). */
export interface ChaosSystem {
  /** The instances' ids. */
  readonly ids: readonly string[];
  /** Starts instance `id` and waits until it answers as itself. @throws when it does not start. */
  start(id: string): Promise<ServiceProcess>;
  /** A stream client on `p` (closed by {@link stop}). */
  stream(p: Pick<ServiceProcess, 'url'>, headers: Record<string, string>): SseClient;
  /** Instances that must be live for one to be killed or paused: 2 keep one serving; 1 takes the only one. */
  readonly minLive: number;
  /** Least pause, ms, and what it outlasts (said in the log). */
  readonly pause: { readonly ms: number; readonly past: string };
  /** Makes the database fail; @returns what was done (said in the log). */
  failDatabase(): Promise<string>;
  /** Ends {@link failDatabase}'s failure. */
  restoreDatabase(): Promise<void>;
  /** Process groups to SIGKILL at {@link stop} (jobs whose instance was killed). */
  readonly leftovers: number[];
  /** Stops every stream and instance, kills the leftovers, removes the files (and the database). */
  stop(): Promise<void>;
}

/** Settings of every instance of a run, either back end. */
export const CHAOS_ENV: Readonly<Record<string, string>> = {
  DISPATCH_CLI: fixture('slow-lines.mjs'),
  CONSOLE_CLICKS_PER_PROJECT: '1000000',
  CONSOLE_CLICKS_MAX_TOTAL: '1000000',
  CONSOLE_MAX_RUNNING_JOBS: '256',
  // Every event of a long run is kept: the checks look acknowledged writes up in them.
  CONSOLE_EVENT_RETENTION: '2000000',
};

/** Cluster mode's instance timeout in the run, ms: a pause outlasts it. */
const INSTANCE_TIMEOUT_MS = 3000;

/**
 * Starts the system of `backend` (the database; no instance yet).
 * @param requestMs the clients' request timeout: a pause of the one SQLite instance outlasts it.
 * @param seconds the run's length: the SQLite tmpfs is sized for its events.
 */
export async function startChaosSystem(backend: ChaosBackend, requestMs: number, seconds: number): Promise<ChaosSystem> {
  return backend === 'cluster' ? startClusterSystem() : startSqliteSystem(requestMs, seconds);
}

async function startClusterSystem(): Promise<ChaosSystem> {
  const cluster = await startCluster(
    {
      ...CHAOS_ENV,
      CONSOLE_INSTANCE_TIMEOUT_MS: String(INSTANCE_TIMEOUT_MS),
      CONSOLE_DATABASE_CONNECT_TIMEOUT_MS: '60000',
    },
    // Immediate stops of the database must not lose what it acknowledged.
    { durableCommits: true },
  );
  return {
    ids: ['n1', 'n2', 'n3'],
    start: (id) => cluster.start(id),
    stream: (p, headers) => cluster.stream(p, headers),
    minLive: 2,
    pause: { ms: INSTANCE_TIMEOUT_MS, past: `the instance timeout (${INSTANCE_TIMEOUT_MS / 1000} s)` },
    failDatabase: async () => {
      await cluster.pg.pause({ immediate: true });
      return 'PostgreSQL stopped (immediate)';
    },
    restoreDatabase: () => cluster.pg.resume(),
    leftovers: cluster.leftovers,
    stop: () => cluster.stop(),
  };
}

async function startSqliteSystem(requestMs: number, seconds: number): Promise<ChaosSystem> {
  if (!canMount()) throw new Error('the SQLite fault-injection run needs root and mount(8) (a tmpfs it fills), as CI has');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-sqlite-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  const stateDir = path.join(tmp, 'state');
  // About 4,000 events a minute of about 500 bytes, with their WAL: room for many times that.
  const unmount = mountTmpfs(stateDir, `${Math.max(128, Math.ceil(seconds / 60) * 64)}m`);
  const instances: ServiceProcess[] = [];
  const streams: SseClient[] = [];
  const leftovers: number[] = [];
  let filler: string | null = null;
  return {
    ids: ['s1'],
    start: async (id) => {
      const p = await startServiceProcess({ env: { ...CHAOS_ENV, CONSOLE_DATA_DIR: store, CONSOLE_STATE_DIR: stateDir, CONSOLE_KILL_GRACE_MS: '300' } });
      instances.push(p);
      void p.exited.then(([code, signal]) => {
        if (code !== 0) process.stderr.write(`chaos: instance ${id} exited (code ${code}, signal ${signal})${p.stderr() ? `: ${p.stderr().slice(-2000)}` : ''}\n`);
      });
      return p;
    },
    stream: (p, headers) => {
      const c = new SseClient(`${p.url}/api/events/stream`, headers);
      streams.push(c);
      return c;
    },
    minLive: 1,
    pause: { ms: requestMs, past: `the clients' request timeout (${requestMs / 1000} s)` },
    failDatabase: async () => {
      const f = fillDisk(stateDir);
      filler = f.file;
      return `the state database's disk filled (${Math.round(f.bytes / 1024)} KiB)`;
    },
    restoreDatabase: async () => {
      if (filler !== null) fs.rmSync(filler, { force: true });
      filler = null;
    },
    leftovers,
    stop: async () => {
      for (const s of streams) s.close();
      for (const p of instances) if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGCONT');
      await Promise.all(instances.map((p) => p.stop()));
      for (const pgid of leftovers) {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      unmount();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}
