/**
 * The error catalogue (style.md, practice 3): one HttpError (status + detail), the mapping of
 * domain errors to statuses, and the error middleware registered last. Error bodies are
 * `{ "detail": … }` (spec: Errors): a string, the MissingCanonicalField object, or the
 * validation array of `{ loc, msg, type }` (api-decisions.md, Validation errors).
 */
import Database from 'better-sqlite3';
import type { ErrorRequestHandler, Request, Response } from 'express';
import { InvalidIdError } from '../engine/ids.js';
import { LegacyProjectError, MissingCanonicalFieldError, NotFoundError, StoreReadTimeoutError } from '../engine/errors.js';
import {
  JobCapacityError,
  JobNotRunningError,
  SpawnError,
  ToolMissingError,
  UnknownJobError,
} from '../supervisor/index.js';

/** One element of a 422 validation detail. `loc` starts with `body`, `query` or `path`. */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
}

/** An HTTP answer other than success. `detail` is served as is; `headers` are added. */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}`);
  }
}

/** A 422 with the validation detail. */
export class ValidationError extends HttpError {
  constructor(readonly issues: readonly ValidationIssue[]) {
    super(422, issues);
  }
}

/** Hook to report an unexpected error (logging); set by the composition root. */
export type ErrorReporter = (err: unknown, req: Request) => void;

/** Maps a thrown error to an HttpError; unknown errors become a 500 without internals. */
export function toHttpError(err: unknown): HttpError {
  if (err instanceof HttpError) return err;
  if (err instanceof InvalidIdError) return new HttpError(400, err.message);
  if (err instanceof NotFoundError) return new HttpError(404, err.message);
  if (err instanceof UnknownJobError) return new HttpError(404, err.message);
  if (err instanceof LegacyProjectError) return new HttpError(410, err.message);
  if (err instanceof MissingCanonicalFieldError) return new HttpError(422, err.detail);
  if (err instanceof JobNotRunningError) return new HttpError(409, err.message);
  if (err instanceof ToolMissingError) return new HttpError(500, err.message);
  if (err instanceof SpawnError) return new HttpError(500, err.message);
  if (err instanceof JobCapacityError) return new HttpError(503, err.message, { 'Retry-After': String(err.retryAfterSeconds) });
  if (err instanceof StoreReadTimeoutError) return new HttpError(503, err.message, { 'Retry-After': String(err.retryAfterSeconds) });
  if (err instanceof Database.SqliteError) return stateDbError(err);
  const e = err as { type?: string; status?: number; message?: string; limit?: number };
  // body-parser errors
  if (e?.type === 'entity.too.large') return new HttpError(413, `request body too large (limit ${e.limit} bytes)`);
  if (e?.type === 'entity.parse.failed') {
    return new ValidationError([{ loc: ['body'], msg: `JSON decode error: ${e.message ?? 'invalid JSON'}`, type: 'json_invalid' }]);
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    // A body that cannot be decoded is unprocessable like one that is not JSON.
    return new ValidationError([{ loc: ['body'], msg: e.message ?? 'unsupported body encoding', type: 'body_encoding' }]);
  }
  if (typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return new HttpError(e.status, e.message ?? 'bad request');
  return new HttpError(500, 'internal server error');
}

/**
 * The state database refused an operation (a fault of the machine, not of the request): 507 when
 * its disk is full, 503 when it is busy (with Retry-After), read-only, failing or corrupt; the
 * detail says what happened and that nothing was stored. Anything else (a constraint) is a bug:
 * a 500 without internals.
 */
function stateDbError(err: { code: string; message: string }): HttpError {
  const c = err.code;
  if (c === 'SQLITE_FULL') return new HttpError(507, `state database full (no space left on its disk): nothing was stored (${err.message})`);
  if (c.startsWith('SQLITE_BUSY') || c.startsWith('SQLITE_LOCKED')) {
    return new HttpError(503, `state database busy: nothing was stored, try again (${err.message})`, { 'Retry-After': '1' });
  }
  if (/^SQLITE_(READONLY|IOERR|CANTOPEN|CORRUPT|NOTADB)/.test(c)) return new HttpError(503, `state database unavailable: nothing was stored (${err.message}, ${c})`);
  return new HttpError(500, 'internal server error');
}

/** Hook for every 5xx answer the error middleware sends (logs when no request log runs). */
export type ServerErrorLogger = (req: Request, status: number, detail: unknown) => void;

/**
 * The error middleware, registered last.
 * @param report called with unexpected errors (a bug: logged with the stack).
 * @param onServerError called for every 5xx answer, expected ones included.
 */
export function errorMiddleware(report: ErrorReporter, onServerError?: ServerErrorLogger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const http = toHttpError(err);
    if (http.status >= 500) {
      // Expected faults (a missing tool, a full disk) are in the request log; only bugs get a stack.
      const expected =
        err instanceof HttpError ||
        err instanceof ToolMissingError ||
        err instanceof SpawnError ||
        err instanceof StoreReadTimeoutError ||
        (err instanceof Database.SqliteError && http.status !== 500);
      if (!expected) report(err, req);
      onServerError?.(req, http.status, http.detail);
    }
    sendError(res, http);
  };
}

export function sendError(res: Response, err: HttpError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(err.status).set(err.headers).json({ detail: err.detail });
}
