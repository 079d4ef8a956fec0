/**
 * One structured log line per request (issue 4, item 9), written by pino-http when the answer
 * ends: `{ reqId, method, route, path, status, durationMs, msg }` at level info (error for a
 * 5xx). No bodies, no headers (so never `Authorization`), no query string (an event stream may
 * carry `?token=`). A route may add fields of its own ({@link addToRequestLine}): a generation
 * request's `episode` and `modality`, which the spec says are accepted and logged.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

/** Where a route's own fields for the request line wait for the line (a symbol: no clash with Node's members). */
const ROUTE_FIELDS = Symbol('request line fields');
type WithFields = ServerResponse & { [ROUTE_FIELDS]?: Record<string, unknown> };

/**
 * Adds `fields` to the request's log line, written when its answer ends (after the standard
 * fields, which they cannot replace). Cheap enough for every request: below level info, where
 * no line is written, they are simply never read.
 * @param fields JSON values; never a secret nor a body (the line's rule).
 */
export function addToRequestLine(res: ServerResponse, fields: Readonly<Record<string, unknown>>): void {
  const r = res as WithFields;
  r[ROUTE_FIELDS] = { ...r[ROUTE_FIELDS], ...fields };
}

/**
 * The request-log middleware; register it first so every answer is logged, 401s included.
 * @returns null below level info, where no request line is written (pino-http's per-request
 *   child logger would cost every request for lines never written).
 */
export function requestLog(logger: Logger, routeOf: (req: Request) => string): RequestHandler | null {
  const line = (req: IncomingMessage, res: ServerResponse, durationMs: number) => {
    const r = req as Request;
    const ended = res.writableEnded;
    return {
      ...(res as WithFields)[ROUTE_FIELDS],
      method: r.method,
      route: routeOf(r),
      path: (r.originalUrl ?? r.url ?? '').split('?')[0],
      status: res.headersSent ? res.statusCode : null,
      durationMs,
      ...(ended ? {} : { aborted: true }),
    };
  };
  const message = (req: IncomingMessage, res: ServerResponse) =>
    `${req.method} ${routeOf(req as Request)} ${res.headersSent ? res.statusCode : '-'}${res.writableEnded ? '' : ' (aborted)'}`;

  // Below info no request line is written: no middleware at all (5xx answers are then logged
  // by the error middleware, which sees every one of them without a per-request listener).
  if (!logger.isLevelEnabled('info')) return null;

  const middleware = pinoHttp({
    logger,
    // Only the request id is bound to `req.log` and to the line; the line's other fields are
    // built below, one by one (pino-http would otherwise bind the whole request, headers and all).
    quietReqLogger: true,
    quietResLogger: true,
    customLogLevel: (_req, res, err) => (err || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessObject: (req, res, val: { responseTime: number }) => line(req, res, val.responseTime),
    customErrorObject: (req, res, _err, val: { responseTime: number }) => line(req, res, val.responseTime),
    customSuccessMessage: (req, res) => message(req, res),
    customErrorMessage: (req, res) => message(req, res),
  });
  return middleware as unknown as RequestHandler;
}
