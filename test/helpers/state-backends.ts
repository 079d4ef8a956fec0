/**
 * The two back ends of the state store (src/state/state-store.ts) as the parameterised
 * behaviour tests use them (test/state/state-store.test.ts): each gives fresh databases, opens
 * stores on them (a second store on one database stands for a second instance), and reads its
 * tables directly for what the interface does not read back.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database, { type Db } from '../../src/state/sqlite/binding.js';
import { openPgStateStore } from '../../src/state/pg/pg-state-store.js';
import { openSqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import type { BackendKind, StateStore } from '../../src/state/state-store.js';
import { startPostgres, type TestPostgres } from './postgres.js';

/** The bounds a store is opened with. */
export interface Bounds {
  readonly eventRetention: number;
  readonly clicksPerProject: number;
  readonly clicksMaxTotal: number;
  readonly workspaceReportsKept: number;
}

export const TEST_BOUNDS: Bounds = { eventRetention: 10_000, clicksPerProject: 3, clicksMaxTotal: 5, workspaceReportsKept: 2 };

/** One database of a back end. */
export interface TestDb {
  /**
   * A store on this database. On PostgreSQL each call opens another pool: another instance.
   * SQLite has one instance per database: every call after the first returns the first store.
   */
  open(bounds?: Partial<Bounds>): Promise<StateStore>;
  /** Opens two stores on the (new) database at once, as two instances starting together. */
  openTwoAtOnce(): Promise<[StateStore, StateStore]>;
  /** Rows in `table`, read directly. */
  count(table: string): Promise<number>;
  /** Writes the schema version the database claims. */
  setSchemaVersion(v: number): Promise<void>;
  /** Closes every store opened on it. */
  close(): Promise<void>;
  /** The SQLite file (SQLite only). */
  readonly file?: string;
}

export interface Backend {
  readonly name: BackendKind;
  /** Whether transactions of two stores on one database run at the same time (not SQLite's one connection). */
  readonly parallel: boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
  fresh(): Promise<TestDb>;
}

/** SQLite: a new file in a temp folder per database. */
export function sqliteBackend(): Backend {
  const dirs: string[] = [];
  return {
    name: 'sqlite',
    parallel: false,
    start: async () => undefined,
    stop: async () => {
      for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
    },
    fresh: async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-store-'));
      dirs.push(dir);
      const file = path.join(dir, 'state.db');
      const opened: StateStore[] = [];
      const openOne = (bounds?: Partial<Bounds>) => openSqliteStateStore(file, { ...TEST_BOUNDS, ...bounds, instanceId: 'local' });
      const raw = <T>(fn: (db: Db) => T): T => {
        const db = new Database(file);
        try {
          return fn(db);
        } finally {
          db.close();
        }
      };
      return {
        file,
        open: async (bounds) => {
          if (opened.length === 0) opened.push(openOne(bounds));
          return opened[0] as StateStore;
        },
        openTwoAtOnce: async () => {
          // One thread: "at once" is one after the other, each with its own connection.
          const a = openOne();
          const b = openOne();
          opened.push(a, b);
          return [a, b];
        },
        count: async (table) => raw((db) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n),
        setSchemaVersion: async (v) => raw((db) => void db.pragma(`user_version = ${v}`)),
        close: async () => {
          for (const s of opened.splice(0)) await s.close();
        },
      };
    },
  };
}

/** PostgreSQL: one server per test file, a fresh database per call; `server()` is that server. */
export function postgresBackend(): Backend & { server(): TestPostgres } {
  let server: TestPostgres | undefined;
  const need = () => {
    if (!server) throw new Error('the PostgreSQL test server is not started (call start() in beforeAll)');
    return server;
  };
  return {
    name: 'postgres',
    parallel: true,
    server: need,
    start: async () => {
      server = await startPostgres();
    },
    stop: async () => {
      await server?.stop();
      server = undefined;
    },
    fresh: async () => {
      const srv = need();
      const url = await srv.freshDatabase();
      const name = new URL(url).pathname.slice(1);
      const opened: StateStore[] = [];
      const openOne = async (bounds?: Partial<Bounds>) => {
        const s = await openPgStateStore({ ...TEST_BOUNDS, ...bounds, url, connectTimeoutMs: 10_000, poolSize: 4 });
        opened.push(s);
        return s;
      };
      return {
        open: openOne,
        openTwoAtOnce: async () => Promise.all([openOne(), openOne()]),
        count: async (table) => (await srv.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`, [], name)).rows.map((r) => Number(r.n))[0] ?? 0,
        setSchemaVersion: async (v) => void (await srv.query('UPDATE console_schema SET version = $1', [v], name)),
        close: async () => {
          for (const s of opened.splice(0)) await s.close();
        },
      };
    },
  };
}
