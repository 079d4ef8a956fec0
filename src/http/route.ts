/** The router of the declared routes (route-spec.ts): serves each with zod validation and renders the OpenAPI document. */
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import type { z } from 'zod';
import { inSequence, runLayer } from './in-sequence.js';
import { documentKey, renderDocument, type DocumentInfo, type DocumentOptions } from './openapi-document.js';
import { SERVED_METHODS, type RouteInput, type RouteMatch, type RouteSpec } from './route-spec.js';
import { camelizeKeys, parseInput } from './validate.js';

export { canonicalPath, type AnswerSpec, type RouteInput, type RouteMatch, type RouteSpec } from './route-spec.js';
export type { DocumentOptions } from './openapi-document.js';

/** A declared route as the dispatcher runs it. */
type Served = (req: Request, res: Response, next: NextFunction, params: Record<string, string>) => void;

/** What the radix tree holds for each method and path. */
interface Declared {
  readonly spec: RouteSpec;
  readonly served: Served;
}

/** A match and the dispatcher's entry, remembered on the request for the URL it was made for. */
interface Found extends RouteMatch {
  readonly served: Served;
  readonly url: string;
  readonly method: string;
}

/** `//` where a parameter belongs matches no route, as in Express. */
function hasEmptyParam(params: Record<string, string>): boolean {
  for (const k in params) if (params[k] === '') return true;
  return false;
}

/** The path of a request URL for the radix tree (given the query, find-my-way would parse it again). */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}

/** Where a request keeps its match (a symbol: no clash with Express's own members). */
const MATCH = Symbol('route match');
type Matched = IncomingMessage & { [MATCH]?: Found | { readonly url: string; readonly method: string; readonly spec?: undefined } };

export class Api {
  private readonly specs: RouteSpec[] = [];
  /**
   * Every route in one find-my-way radix tree: one walk per request, not Express's per-route
   * regexes. Express's defaults: case-insensitive, optional
   * trailing slash, decoded non-empty parameters, HEAD via GET. `maxParamLength` is raised so a
   * long id gets the identifier guard's 400, not a 404. No other normalisation: `//`, `.`, `..` match nothing.
   */
  private readonly router = FindMyWay({ caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: 64 * 1024 });

  /** The API's request handler: runs the route a request matches, or passes it on (404). Mount it on the app. */
  readonly dispatch: RequestHandler = (req, res, next) => {
    const found = this.find(req);
    if (found === null) {
      next();
      return;
    }
    found.served(req, res, next, found.params as Record<string, string>);
  };

  /**
   * The declared route a request reaches, or null (404); decided once per request and URL so the
   * token check, write proxy, request log and dispatcher agree.
   */
  match(req: IncomingMessage): RouteMatch | null {
    return this.find(req);
  }

  private find(req: IncomingMessage): Found | null {
    const r = req as Matched;
    const url = r.url ?? '';
    const method = r.method ?? '';
    const memo = r[MATCH];
    if (memo !== undefined && memo.url === url && memo.method === method) return memo.spec === undefined ? null : (memo as Found);
    const hit = this.router.find(method as HTTPMethod, pathOf(url));
    let found: Found | null = null;
    if (hit !== null) {
      const params = hit.params as Record<string, string>;
      if (!hasEmptyParam(params)) {
        const d = hit.store as Declared;
        found = { spec: d.spec, served: d.served, params, url, method };
      }
    }
    r[MATCH] = found ?? { url, method };
    return found;
  }

  /** The methods serving `req`'s path (HEAD with GET) plus OPTIONS, for a 405's `Allow`; empty means 404. */
  allowedMethods(req: IncomingMessage): string[] {
    const url = req.url ?? '';
    const out: string[] = [];
    for (const m of SERVED_METHODS) {
      const hit = this.router.find(m, pathOf(url));
      if (hit !== null && !hasEmptyParam(hit.params as Record<string, string>)) out.push(m);
    }
    return out.length > 0 ? [...out, 'OPTIONS'] : [];
  }

  private readonly registered: { method: string; path: string }[] = [];

  /** Method and path of every route the dispatcher serves, for introspection (tests). */
  get served(): readonly { method: string; path: string }[] {
    return this.registered;
  }

  private on(method: HTTPMethod, path: string, declared: Declared): void {
    // The handler slot is unused: `find` reads the route from the store.
    this.router.on(method, path, () => {}, declared);
    this.registered.push({ method, path });
  }

  /** Registers a route on the router and in the document. */
  route<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(spec: RouteSpec<P, Q, B>): void {
    this.specs.push(spec as unknown as RouteSpec);
    const guards = spec.guards ?? [];
    // As Express does: the route template, read by request logs and metric labels.
    const route = { path: spec.path };
    // Not async: a handler answering at once costs no promise; the chain takes throws and rejections.
    const handle: RequestHandler = (req, res) => {
      const params = spec.params ? parseInput(spec.params, req.params, 'path') : {};
      const query = spec.query ? parseInput(spec.query, camelizeKeys(req.query), 'query') : {};
      let body: unknown;
      if (spec.body) {
        const raw = req.body === undefined && spec.bodyOptional ? {} : (req.body ?? undefined);
        body = parseInput(spec.body, raw === undefined ? undefined : camelizeKeys(raw), 'body');
      }
      return spec.handler({ req, res, params, query, body } as RouteInput<z.output<P>, z.output<Q>, z.output<B>>) as void | Promise<void>;
    };
    // Guards in turn, then the handler; without guards the handler runs directly.
    const chain: RequestHandler = guards.length === 0 ? (req, res, next) => runLayer(handle, req, res, next) : inSequence([...guards, handle]);
    const served: Served = (req, res, next, params) => {
      req.params = params;
      (req as { route?: unknown }).route = route;
      chain(req, res, next);
    };
    const declared: Declared = { spec: spec as unknown as RouteSpec, served };
    const method = spec.method.toUpperCase() as HTTPMethod;
    this.on(method, spec.path, declared);
    if (method === 'GET') this.on('HEAD', spec.path, declared);
  }

  /** The routes declared so far (for tests and the document). */
  get routes(): readonly RouteSpec[] {
    return this.specs;
  }

  /** The OpenAPI 3.1 document of every declared route (openapi-document.ts). */
  document(info: DocumentInfo, options: DocumentOptions = {}): object {
    return renderDocument(this.specs, info, options);
  }

  /** A key of the document {@link document} renders with these arguments: equal keys, equal documents. */
  documentKey(info: DocumentInfo, options: DocumentOptions = {}): string {
    return documentKey(this.specs, info, options);
  }
}
