/**
 * Opens the state database (SQLite through better-sqlite3) in WAL mode and migrates it.
 * WAL with `synchronous = NORMAL` keeps every committed transaction across a process
 * crash (SIGKILL); only a power loss can lose the last commits, which is the trade the
 * console makes for per-tick batching of events.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './migrations.js';

export type Db = Database.Database;

/** WAL pages after which a commit checkpoints by itself (see the checkpointer). */
export const BACKSTOP_CHECKPOINT_PAGES = 20_000;

/** Thrown when the state database cannot be opened or migrated; the message names the path. */
export class StateDbError extends Error {
  override name = 'StateDbError';
}

/**
 * Opens (creating if needed) the database at `file` and applies pending migrations.
 * @throws StateDbError naming `file` when the folder cannot be created or written, the
 *   file is not a database, or a migration fails. A corrupt file is reported, never replaced.
 */
export function openStateDb(file: string): Db {
  let db: Db | undefined;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.pragma('busy_timeout = 5000');
    db.pragma('foreign_keys = ON');
    // Checkpoints run on the checkpointer's thread (checkpointer.ts); this threshold is only a
    // backstop that bounds the WAL (about 80 MB) when no checkpointer runs (tools, tests).
    db.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
    migrate(db);
    return db;
  } catch (err) {
    db?.close();
    const reason = err instanceof Error ? err.message : String(err);
    throw new StateDbError(`cannot open state database ${file}: ${reason}`, { cause: err });
  }
}

function migrate(db: Db): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(`schema version ${current} is newer than this service (${MIGRATIONS.length})`);
  }
  for (let v = current; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${v + 1}`);
    })();
  }
}
