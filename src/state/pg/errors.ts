// The PostgreSQL back end's faults as the state layer's errors: SQLSTATEs and errno codes are read here and
// nowhere else; the HTTP catalogue maps them (503 with `Retry-After` while the database is unreachable).
import { ServiceError } from '../../errors/index.js';

/** The codes of the PostgreSQL back end's faults (catalogued in src/http/errors.ts). */
export type PgFaultCode = 'state_db_full' | 'state_db_busy' | 'state_db_unavailable' | 'state_db_unreachable';

/**
 * A fault of the PostgreSQL database, not of the request: `state_db_unreachable` (retry after 1 s),
 * `state_db_busy` (serialisation, deadlock, lock: retry), `state_db_full`, `state_db_unavailable`. Nothing
 * was committed, except that a connection lost during COMMIT leaves the outcome unknown (said in the message).
 */
export class PgFaultError extends ServiceError<PgFaultCode> {
  override name = 'PgFaultError';
  /** SQLSTATE or Node's errno code, '' when none. */
  readonly pgCode: string;
  constructor(code: PgFaultCode, message: string, cause: unknown, pgCode: string) {
    super(code, message, { cause, ...(code === 'state_db_unreachable' || code === 'state_db_busy' ? { retryAfterSeconds: 1 } : {}) });
    this.pgCode = pgCode;
  }
}

const NET_ERRNO = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNABORTED']);

const LOST_CONNECTION = /Connection terminated|timeout exceeded when trying to connect|not queryable|Client was closed|connection timeout|Connection ended/i;

/** The state layer's error for a database or connection fault; undefined for anything else (a bug, not a fault). */
export function pgFault(err: unknown): PgFaultError | undefined {
  if (err instanceof PgFaultError) return err;
  if (!(err instanceof Error)) return undefined;
  const code = String((err as { code?: unknown }).code ?? '');
  const what = `${err.message}${code ? ` (${code})` : ''}`;
  // Class 08: connection exception; 57P01-03: the server is shutting down or starting;
  // 53300: too many connections.
  // 25P03/57P05: the server ended a session idle (in a transaction) past its time-out.
  if (NET_ERRNO.has(code) || code.startsWith('08') || /^57P0[1235]$/.test(code) || code === '25P03' || code === '53300' || (code === '' && LOST_CONNECTION.test(err.message))) {
    return new PgFaultError('state_db_unreachable', `state database unreachable: nothing was stored, try again (${what})`, err, code);
  }
  if (code === '53100') return new PgFaultError('state_db_full', `state database full (no space left on its disk): nothing was stored (${what})`, err, code);
  // 40001 serialization failure, 40P01 deadlock, 55P03 lock not available, 57014 statement timeout.
  if (code === '40001' || code === '40P01' || code === '55P03' || code === '57014') {
    return new PgFaultError('state_db_busy', `state database busy: nothing was stored, try again (${what})`, err, code);
  }
  // 25006 read-only transaction (a standby), 53xxx resources, 58xxx system errors, XX internal.
  if (code === '25006' || code.startsWith('53') || code.startsWith('58') || code.startsWith('XX')) {
    return new PgFaultError('state_db_unavailable', `state database unavailable: nothing was stored (${what})`, err, code);
  }
  return undefined;
}

/** `err` as the state layer's error when it is a fault of the database, else unchanged. */
export function asStateError(err: unknown): unknown {
  return pgFault(err) ?? err;
}
