/** Request ids: sent as `X-Request-Id`, logged as `reqId`, and in a 500's body, so what a client saw is found in the log. */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';

/** The header that carries the id, both ways. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** An incoming id is kept only when it plainly is one (nginx `$request_id`, a UUID): nothing else reaches a log as is. */
const CLIENT_ID = /^[A-Za-z0-9._:-]{1,128}$/;

type WithId = IncomingMessage & { id?: unknown };

/** The middleware; register it before the request log (pino-http reads `req.id`). */
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
