/**
 * Request ids (issue 14, item 5): every request gets one, sent back as `X-Request-Id` on every
 * answer, written on its log lines (`reqId`) and in the body of a 500 `internal` answer
 * (`requestId`), so that what a client saw is found in the log.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';

/** The header that carries the id, both ways. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/**
 * An id a client or a balancer in front already gave the request is kept when it is plainly an
 * id (what nginx's `$request_id` or a UUID looks like): nothing else from a request reaches a
 * log line as is.
 */
const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

type WithId = IncomingMessage & { id?: unknown };

/**
 * The middleware; register it first, before the request log (pino-http takes `req.id` as the
 * line's `reqId`). The id is the request's `X-Request-Id` when it is a plain id, else a new
 * UUID.
 */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const given = req.headers['x-request-id'];
    const id = typeof given === 'string' && CLIENT_ID.test(given) ? given : randomUUID();
    (req as WithId).id = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    next();
  };
}

/** The request's id, set by {@link requestId}; undefined before it ran. */
export function requestIdOf(req: IncomingMessage): string | undefined {
  const id = (req as WithId).id;
  return typeof id === 'string' ? id : undefined;
}
