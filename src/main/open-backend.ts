// Each back end is loaded only when chosen, so an instance on SQLite never loads `pg`.
import type { Config } from '../config/config.js';
import type { BackendHooks, StateBackend } from './backend.js';

/** Opens the back end CONSOLE_DATABASE_URL selects (unset: SQLite). @throws StateDbError naming the database when it cannot be opened. */
export async function openStateBackend(config: Config, hooks: BackendHooks): Promise<StateBackend> {
  const url = config.cluster.databaseUrl;
  if (url === null) return (await import('./sqlite-backend.js')).openSqliteBackend(config, hooks);
  return (await import('./postgres-backend.js')).openPostgresBackend(config, url, hooks);
}
