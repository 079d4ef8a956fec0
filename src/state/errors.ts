/**
 * Errors of the state database, whichever back end (their codes are catalogued in
 * src/http/errors.ts). Each back end turns its driver's faults into these codes:
 * src/state/sqlite/errors.ts and src/state/pg/errors.ts.
 */
import { ServiceError } from '../errors/index.js';

/** The codes of the state database's errors. */
export type StateErrorCode = 'state_db_open_failed' | 'state_db_full' | 'state_db_busy' | 'state_db_unavailable' | 'state_db_unreachable';

/**
 * Thrown when the state database cannot be opened or migrated (code `state_db_open_failed`);
 * the message names the path or the database. Stops start-up; never answered.
 */
export class StateDbError extends ServiceError<'state_db_open_failed'> {
  override name = 'StateDbError';
  constructor(message: string, options: { readonly cause?: unknown } = {}) {
    super('state_db_open_failed', message, options);
  }
}
