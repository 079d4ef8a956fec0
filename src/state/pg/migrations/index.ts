/**
 * Schema migrations of the PostgreSQL state database, one file per version, applied in order
 * by schema.ts under an advisory lock; `console_schema` holds how many have run.
 */
import m1 from './001-schema.js';
import m2 from './002-event-proposal-ids.js';
import m3 from './003-faults.js';
import m4 from './004-filter-indexes.js';
import m5 from './005-job-ended.js';
import m6 from './006-linear-append.js';
import m7 from './007-event-kinds.js';

/** The migrations in order: never edit a shipped one, add a file. */
export const PG_MIGRATIONS: readonly string[] = [m1, m2, m3, m4, m5, m6, m7];
