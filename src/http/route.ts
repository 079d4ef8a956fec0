/**
 * The router of the declared routes (route-spec.ts): each route is declared once with its zod
 * schemas (path, query, body, answers); {@link Api.route} serves it, validating requests with
 * them, and {@link Api.document} renders them as the OpenAPI document (openapi-document.ts).
 */
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

/**
 * The path of a request URL, for the radix tree: given the query too, find-my-way would parse
 * it, which Express parses again for the route.
 */
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
   * Every route in one radix tree (find-my-way): a request is matched in one walk of its
   * path, instead of against each route's regular expression in turn through Express's
   * router layers (13% of the service's CPU on the read routes, P1). Matching follows
   * Express's defaults: case-insensitive, an optional trailing slash, parameters decoded, a
   * parameter never empty; GET routes answer HEAD. `maxParamLength`: find-my-way's default
   * (100) would make a long id a 404; the identifier guard answers it (400) with the reason,
   * and Node's parser bounds the whole request line anyway. Paths are decoded as find-my-way
   * decodes them (`%61` is `a`; `%2F` stays a character of a segment, never a separator), and
   * not otherwise normalised: a doubled slash or a `.`/`..` segment matches no route.
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
   * The declared route a request reaches, as the dispatcher will run it, or null when none
   * does (the app's 404). Decided once per request and URL: the token check, the write proxy,
   * the request log and the dispatcher read the same answer.
   * @param req its `method` and `url` (path and query, or an absolute URL) are read.
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

  /**
   * The methods some route serves `req`'s path with (HEAD with GET), plus OPTIONS (answered by
   * CORS on every path), for the `Allow` of a 405; empty when no route has the path, whatever
   * the method (a 404). Runs only for requests no route matched.
   */
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
    // What Express sets once a route handled a request: the route template (request logs and
    // metric labels read it, route-template.ts).
    const route = { path: spec.path };
    // Not async: a handler that answers at once (a cached read) costs no promise. A validation
    // error is thrown, a handler's error thrown or its promise rejected: the chain takes both.
    const handle: RequestHandler = (req, res) => {
      const params = spec.params ? parseInput(spec.params, req.params, 'path') : {};
      const query = spec.query ? parseInput(spec.query, camelizeKeys(req.query), 'query') : {};
      let body: unknown = undefined;
      if (spec.body) {
        const raw = req.body === undefined && spec.bodyOptional ? {} : (req.body ?? undefined);
        body = parseInput(spec.body, raw === undefined ? undefined : camelizeKeys(raw), 'body');
      }
      return spec.handler({ req, res, params, query, body } as RouteInput<z.output<P>, z.output<Q>, z.output<B>>) as void | Promise<void>;
    };
    // The guards in turn, then the handler; an error from any goes to the error middleware.
    // Without guards the handler runs directly (as `inSequence([handle])` would, without its step closure).
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
