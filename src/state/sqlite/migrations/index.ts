/**
 * Schema migrations of the SQLite state database, one file per version, applied in order by
 * db.ts; `PRAGMA user_version` holds how many have run.
 */
import m1 from './001-core.js';
import m2 from './002-console-state.js';
import m3 from './003-event-segments.js';
import m4 from './004-cluster-records.js';
import m5 from './005-job-exit-reason.js';
import m6 from './006-stream-counts.js';
import m7 from './007-versions-and-epochs.js';
import m8 from './008-terminal-credential.js';

/** The migrations in order: never edit a shipped one, add a file. */
export const MIGRATIONS: readonly string[] = [m1, m2, m3, m4, m5, m6, m7, m8];
