/**
 * The optional bearer token (api-decisions.md §Network and safety defaults): with
 * CONSOLE_API_TOKEN set, every route but the open ones needs `Authorization: Bearer`; the event
 * stream also takes `?token=` (EventSource cannot set headers). The route is the router's own match.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { HttpError } from './errors.js';
import type { Api, RouteMatch } from './route.js';

/** Routes served without a token: what a client or probe needs before it has one, and the rendered docs. */
export const OPEN_ROUTES: readonly string[] = ['/api/health', '/api/ready', '/api/config', '/api/openapi.json', '/api/docs'];

/** The route that also accepts the token as a query parameter. */
export const TOKEN_QUERY_ROUTE = '/api/events/stream';

/** Name of the security scheme in the OpenAPI document. */
export const SECURITY_SCHEME = 'bearerAuth';

/**
 * Whether `method path` is served without a token: GET and HEAD of {@link OPEN_ROUTES}.
 * @param path a declared route path (`RouteSpec.path`).
 */
export function isOpenRoute(method: string, path: string): boolean {
  const m = method.toUpperCase();
  return (m === 'GET' || m === 'HEAD') && OPEN_ROUTES.includes(path.toLowerCase());
}

/**
 * The middleware (a null token lets all through). Register after CORS and before the write proxy,
 * so a front checks its own token. Unrouted paths need the token too (401 before 404).
 * @throws HttpError `unauthorized` or `invalid_token` (401, `WWW-Authenticate`), through `next`.
 */
export function bearerAuth(token: string | null, api: Pick<Api, 'match'>): RequestHandler {
  if (token === null) return (_req, _res, next) => next();
  const expected = digest(token);
  return (req, _res, next) => {
    const route = api.match(req);
    if (req.method === 'OPTIONS' || (route !== null && isOpenRoute(req.method, route.spec.path))) {
      next();
      return;
    }
    const presented = presentedToken(req, route);
    if (presented === undefined) {
      next(new HttpError('unauthorized', 'a bearer token is required (Authorization: Bearer <token>)'));
    } else if (!timingSafeEqual(digest(presented), expected)) {
      next(new HttpError('invalid_token', 'invalid bearer token'));
    } else {
      next();
    }
  };
}

/**
 * Whether a request may see what the open routes keep for the token's holders (readiness
 * details): no token is configured (everything is open), or `Authorization: Bearer` carries it.
 */
export function holdsToken(token: string | null, req: Request): boolean {
  if (token === null) return true;
  const presented = presentedToken(req, null);
  return presented !== undefined && timingSafeEqual(digest(presented), digest(token));
}

/** The token of the `Authorization: Bearer` header, else `?token=` on the event stream (GET, and HEAD of it). */
function presentedToken(req: Request, route: RouteMatch | null): string | undefined {
  const header = req.get('authorization');
  if (header !== undefined) {
    const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
    // A malformed header counts as a wrong token, not a missing one.
    return m ? (m[1] as string) : '';
  }
  if ((req.method === 'GET' || req.method === 'HEAD') && route?.spec.path === TOKEN_QUERY_ROUTE) {
    const q = new URL(req.originalUrl ?? req.url, 'http://x').searchParams.get('token');
    if (q !== null) return q;
  }
  return undefined;
}

/** Digests of fixed size keep the comparison constant-time (timingSafeEqual throws on length mismatch). */
function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * Whether the listen address `host` is loopback only (127.0.0.0/8, ::1, localhost): the
 * start-up warning about an open API beyond this machine uses it.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}
