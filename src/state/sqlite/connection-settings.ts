// The settings a connection that writes the state database takes: SQLite keeps them per connection, not in the file,
// so the main connection (db.ts) and the event writer thread's (event-writer-task.ts) each set them, here, alike.
import type { Db } from './binding.js';

/** WAL pages after which a commit checkpoints by itself (see the checkpointer). */
export const BACKSTOP_CHECKPOINT_PAGES = 20_000;

/**
 * Sets `synchronous = NORMAL` (commits survive a process crash), a 5 s busy timeout, foreign keys, and the WAL
 * backstop: checkpoints are the checkpointer's (checkpointer.ts, on the housekeeping thread); at SQLite's default of
 * 1,000 pages a writing connection's commits would checkpoint the log themselves, copying it back and syncing.
 * @throws the database's error.
 */
export function setWriterSettings(db: Db): void {
  db.pragma('synchronous = NORMAL');
  db.pragma('busy_timeout = 5000');
  db.pragma('foreign_keys = ON');
  db.pragma(`wal_autocheckpoint = ${BACKSTOP_CHECKPOINT_PAGES}`);
}
