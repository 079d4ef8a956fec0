/**
 * How the PostgreSQL repositories run statements (issue 13, item 3): through an {@link Exec},
 * either on the pool (each statement its own transaction) or on the client of an open
 * transaction. Work that needs several statements asks for {@link Exec.atomic}: a transaction
 * of its own on the pool, or simply the enclosing one. Faults come out as the state layer's
 * errors (errors.ts).
 */
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
  /**
   * Runs `fn` once the enclosing transaction committed (at once when there is none); its
   * failure is not the transaction's (it committed): `fn` must tolerate being skipped.
   */
  afterCommit(fn: () => Promise<void>): void;
  /**
   * Runs `sql` (no parameters: values inlined as literals) as the last statement of the
   * enclosing transaction, sent with its COMMIT in one round trip, so whatever lock it takes is
   * never held while the server waits for this client; alone when there is no transaction.
   * At most once per transaction.
   * @returns its result, once the transaction committed; rejects when it or the commit failed
   *   (the transaction then rolled back). Never await it inside the transaction's function.
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

/**
 * Runs `fn` in a transaction on one pooled client: COMMIT when it resolves, ROLLBACK when it
 * throws (rethrown, a fault of the database as the state layer's error). A client whose
 * connection failed is destroyed rather than returned to the pool.
 */
export async function runTransaction<T>(pool: Pool, fn: (x: Exec) => Promise<T>): Promise<T> {
  let client: PoolClient;
  try {
    client = await pool.connect();
  } catch (err) {
    throw asStateError(err);
  }
  // A checked-out client's connection can fail between statements (the server went away): the
  // pool listens only to idle clients, and an 'error' nobody listens to ends the process. The
  // next statement fails too, and the client is then destroyed, not returned to the pool.
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
      // One simple-protocol query, two statements: the server runs the COMMIT right after the
      // last statement, whatever this process does meanwhile (it may be paused).
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
