// The PostgreSQL schema of the state store (cluster.md): SQLite's tables plus what the cluster needs, migrated at
// start-up under an advisory lock. `event_sequencer`'s row lock, held until commit, assigns event ids in commit
// order without gaps; `counters` serialises click appends across instances; `recent_seq` orders recent items
// (`max(seq) + 1` would race). Ordered text is `COLLATE "C"`, byte order as on SQLite. Never edit a shipped
// migration: append one.
import type { PoolClient } from 'pg';
import { StateDbError } from '../errors.js';
import { PG_MIGRATIONS } from './migrations/index.js';

export { PG_MIGRATIONS };

/** The schema version this code knows: the number of its migrations. */
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/** Session advisory lock key while migrating ("cons" in ASCII): instances starting together queue on it. */
const MIGRATION_LOCK = 0x636f6e73;

/**
 * Brings the schema to {@link PG_SCHEMA_VERSION} under the advisory lock, a transaction per migration; @returns the version.
 * @throws StateDbError (`state_db_open_failed`) when the schema is newer than this code or a migration failed.
 */
export async function migrateSchema(client: PoolClient, migrations: readonly string[] = PG_MIGRATIONS): Promise<number> {
  // Others wait here for the first instance's migrations, and a migration may outlast the pool's statement bound.
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
        await client.query('INSERT INTO console_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version', [v + 1]);
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
