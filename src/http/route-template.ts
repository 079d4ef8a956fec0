/**
 * The route template of a request (`/api/projects/:projectId`), for metric labels and request
 * logs: bounded cardinality, and no identifiers or tokens from the URL.
 */
import type { Request } from 'express';
import type { Api } from './route.js';

/** Label of a request no declared route matches (404s, probes). */
export const UNMATCHED_ROUTE = '(unmatched)';

/** Returns a function giving the route template of a request, or {@link UNMATCHED_ROUTE}. */
export function routeTemplates(api: Api): (req: Request) => string {
  let matchers: { re: RegExp; template: string }[] | undefined;
  return (req) => {
    // Express sets req.route once a route handled the request.
    const route = (req as { route?: { path?: unknown } }).route;
    if (route && typeof route.path === 'string') return req.baseUrl + route.path;
    // Requests answered before routing (401, forwarded mutations, CORS preflights): match
    // the declared routes the way Express would (case-insensitive, optional trailing slash).
    matchers ??= api.routes.map((r) => ({ re: toRegExp(r.path), template: r.path }));
    const pathname = (req.originalUrl ?? req.url).split('?')[0] ?? '';
    for (const m of matchers) if (m.re.test(pathname)) return m.template;
    return UNMATCHED_ROUTE;
  };
}

/** `/a/:id/*rest` → `^/a/[^/]+/.+/?$`, case-insensitive. */
function toRegExp(template: string): RegExp {
  let src = '';
  for (const part of template.split(/(:[A-Za-z_$][\w$]*|\*[A-Za-z_$][\w$]*)/)) {
    if (part.startsWith(':')) src += '[^/]+';
    else if (part.startsWith('*')) src += '.+';
    else src += part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${src.replace(/\/$/, '')}/?$`, 'i');
}
