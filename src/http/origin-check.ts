/**
 * Cross-site requests that change state are refused (a browser's defence, for the case where
 * no token is set: a page of any site could otherwise make the visitor's browser approve a
 * proposal or cancel a job with an auto-submitted form, which the JSON-only rule lets through
 * when the body is empty).
 *
 * A request with a method other than GET, HEAD and OPTIONS whose `Origin` header is present must
 * come from the service's own origin (the `Origin`'s host and port are the request's `Host`: the
 * ops page, also behind a balancer that keeps the `Host`) or from an allowed CORS origin (spec:
 * Cross-cutting behaviour, 1). Anything else, `Origin: null` included (a sandboxed or opaque
 * origin), is a 403 `cross_site_request`. A request without `Origin` (curl, the console's
 * server-side callers, a browser's same-origin GET) is not a cross-site browser request.
 */
import type { RequestHandler } from 'express';
import { HttpError } from './errors.js';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * The check, as a middleware.
 * @param allowed the CORS allow-list (`http://host:port`, compared without case).
 */
export function originCheck(allowed: readonly string[]): RequestHandler {
  const origins = new Set(allowed.map((o) => o.toLowerCase()));
  return (req, _res, next) => {
    const origin = req.headers.origin;
    if (origin === undefined || SAFE.has(req.method)) return next();
    if (origins.has(origin.toLowerCase()) || sameOrigin(origin, req.headers.host)) return next();
    next(new HttpError('cross_site_request', `cross-site request refused: Origin ${JSON.stringify(origin)} is neither this service nor an allowed origin`));
  };
}

/** Whether `origin` names the host (and port) the request was sent to. */
function sameOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  try {
    const u = new URL(origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
}
