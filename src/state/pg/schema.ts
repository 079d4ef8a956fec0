/**
 * The PostgreSQL schema of the state store (issue 13, item 3; shared/design/cluster.md) and its
 * migrations, applied at start-up under an advisory lock.
 *
 * The tables are those of the SQLite database (src/state/migrations.ts), with PostgreSQL's
 * types, plus what the cluster needs:
 * - `event_sequencer`: one row holding the last event id. The transaction that stores events
 *   takes its next ids with `UPDATE … RETURNING`, which locks the row until that transaction
 *   ends: writers of events are serialised there, so ids are assigned in commit order and a
 *   reader that has seen id N has seen every smaller id. A rolled-back transaction rolls its
 *   ids back too: ids have no gaps.
 * - `events`: one table (retention deletes the oldest ids in ranges, see event-repo.ts).
 * - `counters`: the number of stored clicks, kept in the append's transaction (its row lock
 *   also serialises click appends, so the ring and the total bound hold across instances).
 * - `recent_seq`: a sequence ordering recent items (`max(seq) + 1` races between instances).
 * - `seq` columns on jobs and proposals: insertion order, for SQLite's `rowid` tie-break.
 * - `instances` and `terminals`; `jobs.instance_id`.
 * - `events.proposal_id` (migration 2), the column the `proposal` filter reads.
 * JSON values are stored as text, exactly as on SQLite. Booleans are booleans. Text that is
 * ordered or compared (times, the ids listed in order) is `COLLATE "C"`: byte order, as SQLite's.
 *
 * `console_schema` holds how many migrations ran. Never edit a shipped migration: append one.
 */
import type { PoolClient } from 'pg';
import { StateDbError } from '../errors.js';
import { PG_MIGRATIONS } from './migrations/index.js';

export { PG_MIGRATIONS };

/** The schema version this code knows: the number of its migrations. */
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * Key of the session-level advisory lock held while migrating (any fixed number; this one
 * spells "cons" in ASCII). Instances that start together queue on it: the first migrates,
 * the others then find nothing to do.
 */
const MIGRATION_LOCK = 0x636f6e73;

/**
 * Brings the schema to {@link PG_SCHEMA_VERSION} under the advisory lock, one transaction per
 * migration; the lock is released (and `client` left usable) whatever happens.
 * @param migrations the migrations to apply (tests pass their own); default {@link PG_MIGRATIONS}.
 * @returns the schema version now.
 * @throws StateDbError (`state_db_open_failed`) when the database's schema is newer than this
 *   code (naming both versions: an instance older than the schema refuses to start), or a
 *   migration failed (naming it, with the database's error as `cause`).
 */
export async function migrateSchema(client: PoolClient, migrations: readonly string[] = PG_MIGRATIONS): Promise<number> {
  // Instances starting together wait here for the first one's migrations, however long they
  // take; and a migration may run longer than a statement is allowed to (the pool's bounds).
  await client.query('SET lock_timeout = 0; SET statement_timeout = 0');
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS console_schema (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)');
    const rows = (await client.query<{ version: number }>('SELECT version FROM console_schema WHERE id = 1')).rows;
    const current = rows[0]?.version ?? 0;
    if (current > migrations.length) {
      throw new StateDbError(
        `the PostgreSQL state database has schema version ${current}, newer than this service's (${migrations.length}): ` +
          'an instance older than the schema refuses to start; run the newer version of the service',
      );
    }
    for (let v = current; v < migrations.length; v++) {
      try {
        await client.query('BEGIN');
        await client.query(migrations[v] as string);
        await client.query(
          'INSERT INTO console_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version',
          [v + 1],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new StateDbError(`migration ${v + 1} of the PostgreSQL state database failed: ${(err as Error).message}`, { cause: err });
      }
    }
    return migrations.length;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    // Back to the pool's bounds (the connection's own settings) before the client is reused.
    await client.query('RESET lock_timeout; RESET statement_timeout').catch(() => undefined);
  }
}
