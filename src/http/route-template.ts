/**
 * The route template of a request (`/api/projects/:projectId`), for metric labels and request
 * logs: bounded cardinality, and no identifiers or tokens from the URL.
 */
import type { Request } from 'express';
import type { Api } from './route.js';

/** Label of a request no declared route matches (404s, probes). */
export const UNMATCHED_ROUTE = '(unmatched)';

/** The route template of a request, or {@link UNMATCHED_ROUTE}, from the router's match, also for answers before routing. */
export function routeTemplates(api: Api): (req: Request) => string {
  return (req) => {
    // The dispatcher sets req.route once a route handled the request.
    const route = (req as { route?: { path?: unknown } }).route;
    if (route && typeof route.path === 'string') return req.baseUrl + route.path;
    // A CORS preflight is counted under the route it asks about.
    const asked = req.method === 'OPTIONS' ? req.get('access-control-request-method') : undefined;
    const m = asked === undefined ? api.match(req) : api.match({ method: asked.toUpperCase(), url: req.url } as Request);
    return m?.spec.path ?? UNMATCHED_ROUTE;
  };
}
