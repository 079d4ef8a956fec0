/**
 * Instances of the service in cluster mode for the tests (shared/design/cluster.md): one real
 * PostgreSQL per test file (test/helpers/postgres.ts), one engine store copied for all of them,
 * a state folder each; instances as separate processes (test/helpers/service-process.ts), so
 * they can be killed, paused (SIGSTOP) and started again.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { allEvents, waitFor, type EngineEvent } from './events.js';
import { startPostgres, type TestPostgres } from './postgres.js';
import { fixture, SAMPLE_STORE } from './service.js';
import { startServiceProcess, type ServiceProcess } from './service-process.js';
import { SseClient } from './sse.js';

/** The database, the store and every instance and stream a test file started. */
export interface Cluster {
  readonly pg: TestPostgres;
  /** The shared database's URL. */
  readonly url: string;
  readonly tmp: string;
  /** The shared engine store (a copy of the sample store). */
  readonly store: string;
  /** Environment of instance `id` on the shared database and store (`extra` wins). */
  envOf(id: string, extra?: Record<string, string>): Record<string, string>;
  /** Starts instance `id` and waits until it answers as itself. */
  start(id: string, extra?: Record<string, string>): Promise<ServiceProcess>;
  /** A stream client on `p` (closed by {@link stop}). */
  stream(p: Pick<ServiceProcess, 'url'>, headers?: Record<string, string>, query?: string): SseClient;
  /** Process groups to SIGKILL at {@link stop} (jobs whose instance was killed). */
  readonly leftovers: number[];
  /** Stops every stream and instance, kills the leftovers, stops the database, removes the files. */
  stop(): Promise<void>;
}

/**
 * Starts the database and copies the store.
 * @param defaults environment of every instance (before each one's own).
 * @param pgOptions startPostgres's (durable commits, for a run that crashes the server).
 */
export async function startCluster(defaults: Record<string, string> = {}, pgOptions: Parameters<typeof startPostgres>[0] = {}): Promise<Cluster> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-'));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  const pg = await startPostgres(pgOptions);
  const url = await pg.freshDatabase();
  const instances: ServiceProcess[] = [];
  const streams: SseClient[] = [];
  const leftovers: number[] = [];
  const envOf = (id: string, extra: Record<string, string> = {}): Record<string, string> => {
    const stateDir = path.join(tmp, `state-${id}`);
    fs.mkdirSync(stateDir, { recursive: true });
    return {
      CONSOLE_DATABASE_URL: url,
      CONSOLE_INSTANCE_ID: id,
      // The service's default. With 2 s, an instance that a loaded machine (CI: six test files, a
      // browser, three databases on 2 cores) kept from beating for 2 s was judged dead by design,
      // and its job marked lost while a test waited for its lines. A test about judgement sets its own.
      CONSOLE_INSTANCE_TIMEOUT_MS: '10000',
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      DISPATCH_CLI: fixture('forever.mjs'),
      CONSOLE_KILL_GRACE_MS: '300',
      ...defaults,
      ...extra,
    };
  };
  return {
    pg,
    url,
    tmp,
    store,
    envOf,
    leftovers,
    start: async (id, extra = {}) => {
      const p = await startServiceProcess({ env: envOf(id, extra) });
      instances.push(p);
      // Said when it happens: a test that kills an instance expects it; one that does not
      // learns here why the instance stopped answering.
      void p.exited.then(([code, signal]) => {
        if (code !== 0) process.stderr.write(`cluster: instance ${id} exited (code ${code}, signal ${signal})${p.stderr() ? `: ${p.stderr().slice(-2000)}` : ''}\n`);
      });
      return p;
    },
    stream: (p, headers = {}, query = '') => {
      const c = new SseClient(`${p.url}/api/events/stream${query}`, headers);
      streams.push(c);
      return c;
    },
    stop: async () => {
      for (const s of streams) s.close();
      for (const p of instances) {
        // A paused instance cannot act on SIGTERM.
        if (p.child.exitCode === null && p.child.signalCode === null) p.child.kill('SIGCONT');
      }
      await Promise.all(instances.map((p) => p.stop()));
      for (const pgid of leftovers) {
        try {
          process.kill(-pgid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      await pg.stop();
      fs.rmSync(tmp, { recursive: true, force: true });
    },
  };
}

/** A JSON answer's body; throws with the status and body when it is not 2xx. */
export async function json<T>(res: Promise<Response>): Promise<T> {
  const r = await res;
  const body = (await r.json()) as T;
  if (!r.ok) throw new Error(`${r.status}: ${JSON.stringify(body)}`);
  return body;
}

/** A JSON POST to `p`. */
export const post = (p: Pick<ServiceProcess, 'url'>, route: string, body: unknown): Promise<Response> =>
  fetch(`${p.url}${route}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Publishes through the loopback-only internal bus route; resolves to the event id. */
export async function publish(p: Pick<ServiceProcess, 'url'>, summary: string, scope = 'test/cluster'): Promise<string> {
  return (await json<{ id: string }>(post(p, '/api/internal/bus', { severity: 'info', scope, summary }))).id;
}

/**
 * Waits until an event of job `proposalId` matching `match` is stored, read through `reader`; fails at once,
 * naming what the job's instance and `reader` saw, when the job ended without one (lost, cancelled, failed).
 * @returns every event of the job read then.
 */
export async function waitForJobEvent(
  reader: Pick<ServiceProcess, 'url'>,
  owner: Pick<ServiceProcess, 'url'>,
  proposalId: string,
  match: (e: EngineEvent) => boolean,
  what: string,
): Promise<EngineEvent[]> {
  const seen = async (q: Pick<ServiceProcess, 'url'>) => {
    const job = await (await fetch(`${q.url}/api/jobs/${proposalId}`)).text();
    const evs = await allEvents(q.url, `proposalId=${proposalId}`);
    const bus = (await json<{ bus: unknown }>(fetch(`${q.url}/api/system-status`))).bus;
    return `job ${job}; ${evs.length} events, the last: ${JSON.stringify(evs.at(-1)?.summary)}; bus ${JSON.stringify(bus)}`;
  };
  const failed = async (why: string): Promise<never> => {
    throw new Error(`${why}. On the job's instance: ${await seen(owner).catch((e: Error) => e.message)}. On the reader: ${await seen(reader).catch((e: Error) => e.message)}`);
  };
  const found = await waitFor(async () => {
    // The state first: once it has ended, the events read after it are all there will be (they commit before its end).
    const { state } = await json<{ state: string }>(fetch(`${reader.url}/api/jobs/${proposalId}`));
    const events = await allEvents(reader.url, `proposalId=${proposalId}`);
    if (events.some(match)) return events;
    return state === 'running' ? undefined : null;
  }, what).catch((err: Error) => failed(`gave up waiting for ${what} (${err.message})`));
  return found ?? failed(`${what}: the job ended without it`);
}

/** Whether a process exists (a zombie counts as gone). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^State:\s+Z/m.test(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  } catch {
    return false;
  }
}
