/**
 * The optional bearer token (api-decisions.md, "Network and safety defaults";
 * issue 4, item 10): when CONSOLE_API_TOKEN is set, every route but `GET /api/health`,
 * `GET /api/ready` (issue 14, item 3), `GET /api/config`, `GET /api/openapi.json` and its rendering `GET /api/docs` needs
 * `Authorization: Bearer <token>`;
 * the event stream also takes `?token=` (EventSource cannot set headers). Unset: open.
 * Which route a request is for is the router's own match (`Api.match`, issue 10, item 1): every
 * spelling the router serves as a route is checked as that route.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import type { Request, RequestHandler } from 'express';
import { HttpError } from './errors.js';
import type { Api, RouteMatch } from './route.js';

/**
 * Routes served without a token: what a client (or a balancer's probe) needs before it has
 * one, and the document rendered for people (issue 14, item 7). The ops page's own files are
 * served before this check (ops-page.ts).
 */
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
 * The middleware; with a null token it lets everything through. Register it after CORS (whose
 * preflight answers end OPTIONS requests; they also pass here) and before the write proxy, so
 * the front checks its own token before forwarding (the `Authorization` header is forwarded
 * unchanged for the upstream to check its own). A path that reaches no route needs the token
 * too (401 before 404: no route discovery).
 * @param api the router whose match decides which route a request is for.
 * @throws HttpError `unauthorized` (no token) or `invalid_token` (another one), through `next`:
 *   401 with `WWW-Authenticate: Bearer …` (the catalogue, errors.ts).
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

/**
 * Comparing fixed-size digests keeps the comparison constant-time whatever the lengths
 * (timingSafeEqual itself throws on a length mismatch, which would leak the length, and
 * answer a 500 for a token of another length).
 */
function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/**
 * Whether the listen address `host` is loopback only (127.0.0.0/8, ::1, localhost): the
 * start-up warning about an open API beyond this machine uses it.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[|\]$/g, '');
  if (h === 'localhost' || h.endsWith('.localhost')) return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}
