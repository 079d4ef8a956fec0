// The SQLite back end's faults as the state layer's errors; SQLite's error codes are read here and nowhere else.
import Database from './binding.js';
import { ServiceError } from '../../errors/index.js';

/** The state database refused an operation, nothing stored: `state_db_full`, `state_db_busy` (retry after 1 s)
 * or `state_db_unavailable` (read-only, failing or damaged). */
export class StateDbFaultError extends ServiceError<'state_db_full' | 'state_db_busy' | 'state_db_unavailable'> {
  override name = 'StateDbFaultError';
  /** The SQLite error code (`SQLITE_FULL`, `SQLITE_BUSY_SNAPSHOT`…). */
  readonly sqliteCode: string;
  constructor(code: 'state_db_full' | 'state_db_busy' | 'state_db_unavailable', message: string, cause: { code: string }) {
    super(code, message, { cause, ...(code === 'state_db_busy' ? { retryAfterSeconds: 1 } : {}) });
    this.sqliteCode = cause.code;
  }
}

/** The state layer's error for a SqliteError that is a database fault; undefined for others (a constraint is a bug). */
export function stateDbFault(err: unknown): StateDbFaultError | undefined {
  if (!(err instanceof Database.SqliteError)) return undefined;
  const c = err.code;
  if (c === 'SQLITE_FULL') return new StateDbFaultError('state_db_full', `state database full (no space left on its disk): nothing was stored (${err.message})`, err);
  if (c.startsWith('SQLITE_BUSY') || c.startsWith('SQLITE_LOCKED')) {
    return new StateDbFaultError('state_db_busy', `state database busy: nothing was stored, try again (${err.message})`, err);
  }
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|CORRUPT|NOTADB)/.test(c)) {
    return new StateDbFaultError('state_db_unavailable', `state database unavailable: nothing was stored (${err.message}, ${c})`, err);
  }
  return undefined;
}
