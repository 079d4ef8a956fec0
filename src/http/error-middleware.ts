// Answering errors (style.md, "Errors in one catalogue"): anything passed on becomes the catalogue's answer
// (errors.ts), and every 5xx is logged with why.
import type { ErrorRequestHandler, Request, Response } from 'express';
import { isServiceError, type ServiceErrorLike, type ServiceErrorOptions } from '../errors/index.js';
import { stateDbFault } from '../state/sqlite/errors.js';
import { answerOf, HttpError, ValidationError, type ErrorAnswer } from './errors.js';
import { addToRequestLine } from './request-log.js';

/** Errnos of the service's own resources running out, whatever call met them. */
const SERVICE_RESOURCE_CODES = new Set(['EMFILE', 'ENFILE', 'ENOMEM']);

/** Whether a body-parser 4xx is the request's fault; it also says 400 for its own failures (EMFILE…), the service's. */
function isRequestFault(err: unknown): boolean {
  const e = err as { type?: unknown; errno?: unknown; path?: unknown; code?: unknown } | null | undefined;
  if (typeof e?.type === 'string') return true;
  return typeof e?.errno === 'number' && e.path === undefined && !SERVICE_RESOURCE_CODES.has(String(e.code));
}

/** The service's error for anything thrown; what it does not know is `internal`, the thrown value as `cause`. */
export function toServiceError(err: unknown): ServiceErrorLike {
  if (isServiceError(err)) return err;
  const fault = stateDbFault(err);
  if (fault !== undefined) return fault;
  const e = err as { type?: string; status?: number; message?: string; limit?: number } | null | undefined;
  const cause: ServiceErrorOptions = { cause: err };
  // body-parser's errors (app.ts, jsonBody)
  if (e?.type === 'entity.too.large') return new HttpError('body_too_large', `request body too large (limit ${e.limit} bytes)`, cause);
  if (e?.type === 'entity.parse.failed') {
    return withCause(new ValidationError([{ loc: ['body'], msg: `JSON decode error: ${e.message ?? 'invalid JSON'}`, type: 'json_invalid' }]), err);
  }
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    // A body that cannot be decoded is unprocessable like one that is not JSON.
    return withCause(new ValidationError([{ loc: ['body'], msg: e.message ?? 'unsupported body encoding', type: 'body_encoding' }]), err);
  }
  if (isRequestFault(err) && typeof e?.status === 'number' && e.status >= 400 && e.status < 500) return new HttpError('bad_request', e.message ?? 'bad request', cause);
  return new HttpError('internal', 'internal server error', cause);
}

function withCause<E extends Error>(err: E, cause: unknown): E {
  err.cause = cause;
  return err;
}

/** What the log is told of a 5xx answer; `internal` ones were not expected and are logged with their stack. */
export interface ServerFault {
  readonly status: number;
  readonly code: string;
  readonly detail: unknown;
  /** Why, in one line: the error's message, then its causes' (`: caused by …`). */
  readonly reason: string;
  readonly err: unknown;
  readonly internal: boolean;
}

/** Hook for every 5xx answer the error middleware sends; set by the app (logging). */
export type ServerFaultReporter = (req: Request, res: Response, fault: ServerFault) => void;

/**
 * The error middleware, registered last: answers from the catalogue, once a `settled` error's facts came.
 * @param report called for every 5xx answer before it is sent.
 */
export function errorMiddleware(report: ServerFaultReporter, requestIdOf: (req: Request) => string | undefined = () => undefined): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const e = toServiceError(err);
    const answer = () => {
      const a = answerOf(e, requestIdOf(req));
      if (a.status < 500) {
        sendAnswer(res, a);
        return;
      }
      const internal = a.body.code === 'internal';
      const reason = reasonOf(internal ? err : e);
      report(req, res, { status: a.status, code: a.body.code, detail: a.body.detail, reason, err, internal });
      sendAnswer(res, a, reason);
    };
    if (e.settled === undefined) answer();
    else void e.settled.then(answer, answer);
  };
}

/** An error in one line for a log, with its errno and up to four causes (`…: caused by …`); never sent to a client. */
export function reasonOf(err: unknown): string {
  const parts: string[] = [];
  let e: unknown = err;
  for (let depth = 0; depth < 4 && e !== undefined && e !== null; depth++) {
    let text = e instanceof Error ? e.message : String(e);
    text = text.split('\n', 1)[0] ?? '';
    // A service error's code is the line's own `code`; a Node error's is news.
    const code = (e as { code?: unknown }).code;
    if (!isServiceError(e) && typeof code === 'string' && !text.includes(code)) text += ` (${code})`;
    if (parts.at(-1) !== text) parts.push(text);
    e = e instanceof Error ? e.cause : undefined;
  }
  return parts.join(': caused by ');
}

/** Sends the catalogue's answer to `err`; destroys the connection when an answer had started. */
export function sendError(res: Response, err: ServiceErrorLike): void {
  const a = answerOf(err);
  sendAnswer(res, a, a.status >= 500 ? reasonOf(err) : undefined);
}

/** @param reason of a 5xx: written on the request's log line with the code (request-log.ts). */
function sendAnswer(res: Response, a: ErrorAnswer, reason?: string): void {
  if (reason !== undefined) addToRequestLine(res, { code: a.body.code, reason });
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.status(a.status).set(a.headers).json(a.body);
}
