/**
 * One structured log line per request (pino-http): `{ reqId, method, route, path, status,
 * durationMs }`, error level for 5xx. Never bodies, headers or query strings (`?token=`). Routes
 * may add fields ({@link addToRequestLine}); every 5xx line gives the error's `code` and `reason`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';

/** Where a route's own fields for the request line wait for the line (a symbol: no clash with Node's members). */
const ROUTE_FIELDS = Symbol('request line fields');
type WithFields = ServerResponse & { [ROUTE_FIELDS]?: Record<string, unknown> };

/**
 * Adds `fields` to the request's log line (after the standard fields, which they cannot replace).
 * @param fields JSON values; never a secret nor a body.
 */
export function addToRequestLine(res: ServerResponse, fields: Readonly<Record<string, unknown>>): void {
  const r = res as WithFields;
  r[ROUTE_FIELDS] = { ...r[ROUTE_FIELDS], ...fields };
}

/** The request-log middleware, registered first; null below level info (a child logger per request would cost for nothing). */
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
  const message = (req: IncomingMessage, res: ServerResponse) => `${req.method} ${routeOf(req as Request)} ${res.headersSent ? res.statusCode : '-'}${res.writableEnded ? '' : ' (aborted)'}`;

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
