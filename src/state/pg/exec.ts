// How the PostgreSQL repositories run statements: on the pool (each statement its own transaction) or in an
// open transaction; {@link Exec.atomic} gives several statements one. Faults become errors.ts errors.
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { asStateError } from './errors.js';

/** Runs statements for the repositories. */
export interface Exec {
  /** One statement with `$n` parameters. @throws PgFaultError for a fault of the database. */
  q<R extends QueryResultRow = QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Whether the statements run in an open transaction (else each commits by itself). */
  readonly inTransaction: boolean;
  /** Runs `fn` in one transaction: a new one on the pool, or the enclosing transaction. */
  atomic<T>(fn: (x: Exec) => Promise<T>): Promise<T>;
  /** Runs `fn` once the enclosing transaction committed (at once without one); `fn` must tolerate being skipped. */
  afterCommit(fn: () => Promise<void>): void;
  /**
   * Runs `sql` (values inlined) as the transaction's last statement, sent with its COMMIT in one round trip,
   * so no lock it takes is held while the server waits for this client. At most once per transaction.
   * @returns its result after commit; rejects if it or the commit failed. Never await it inside the transaction.
   */
  onCommit(sql: string): Promise<QueryResult>;
}

/** An Exec on the pool: each statement commits by itself. */
export function poolExec(pool: Pool): Exec {
  const x: Exec = {
    q: async (sql, params) => {
      try {
        return await pool.query(sql, params as unknown[]);
      } catch (err) {
        throw asStateError(err);
      }
    },
    inTransaction: false,
    atomic: (fn) => runTransaction(pool, fn),
    afterCommit: (fn) => void fn().catch(() => undefined),
    onCommit: (sql) => x.q(sql),
  };
  return x;
}

/** Runs `fn` in a transaction on one pooled client; a client whose connection failed is destroyed, not returned. */
export async function runTransaction<T>(pool: Pool, fn: (x: Exec) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw asStateError(err);
  }
  // A checked-out client's connection can fail between statements, and an 'error' nobody listens to ends the process.
  let broken: Error | undefined;
  const onError = (err: Error) => void (broken = err);
  client.on('error', onError);
  const hooks: (() => Promise<void>)[] = [];
  let last: { sql: string; resolve: (r: QueryResult) => void; reject: (err: unknown) => void } | undefined;
  let open = true;
  const q = async <R extends QueryResultRow>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>> => {
    if (!open) throw new Error('state store: a transaction was used after it ended');
    return client.query<R>(sql, params as unknown[]);
  };
  const x: Exec = {
    q: async (sql, params) => {
      try {
        return await q(sql, params);
      } catch (err) {
        throw asStateError(err);
      }
    },
    inTransaction: true,
    atomic: (inner) => inner(x),
    afterCommit: (hook) => void hooks.push(hook),
    onCommit: (sql) => {
      if (!open) return Promise.reject(new Error('state store: a transaction was used after it ended'));
      if (last !== undefined) return Promise.reject(new Error('state store: a transaction has one last statement'));
      const p = new Promise<QueryResult>((resolve, reject) => (last = { sql, resolve, reject }));
      // Its failure is the transaction's, thrown by it: a caller that never awaits this is not told twice.
      p.catch(() => undefined);
      return p;
    },
  };
  try {
    await q('BEGIN');
    const result = await fn(x);
    if (last === undefined) await q('COMMIT');
    else {
      // One simple-protocol query: the server runs the COMMIT right after, even if this process is paused.
      const results = (await client.query(`${last.sql};\nCOMMIT`)) as unknown as QueryResult[];
      last.resolve(results[0] as QueryResult);
    }
    open = false;
    for (const hook of hooks) await hook().catch(() => undefined);
    return result;
  } catch (err) {
    open = false;
    last?.reject(asStateError(err));
    try {
      await client.query('ROLLBACK');
    } catch (rollbackErr) {
      broken = rollbackErr as Error;
    }
    throw asStateError(err);
  } finally {
    open = false;
    client.off('error', onError);
    client.release(broken);
  }
}
