/**
 * Cross-site state changes are refused: without a token, any site's auto-submitted form could
 * approve or cancel (an empty body passes the JSON-only rule). A mutation with an `Origin` must be
 * the service's own (matching `Host`) or an allowed CORS origin (service-spec.md §Cross-cutting
 * behaviour); else 403 `cross_site_request`, `Origin: null` included. No `Origin`: not a browser cross-site request.
 */
import type { RequestHandler } from 'express';
import { HttpError } from './errors.js';

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The check, as a middleware; `allowed` is the CORS allow-list (`http://host:port`, case-insensitive). */
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
