/**
 * Route definitions shared by Express and the OpenAPI document: each route is declared once
 * with its zod schemas (path, query, body, answers); `Api.route` validates requests with
 * them and `Api.document` renders them through zod-openapi (issue: service routes, item 7).
 */
import { createHash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import FindMyWay, { type HTTPMethod } from 'find-my-way';
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { inSequence, runLayer } from './in-sequence.js';
import { ANSWERED_CODES, ERROR_CATALOGUE } from './errors.js';
import { ErrorBody } from './schemas.js';
import { camelizeKeys, parseInput } from './validate.js';

type Method = 'get' | 'post' | 'put' | 'delete';

/** One documented answer. `schema` is the JSON body; `contentType` defaults to JSON. */
export interface AnswerSpec {
  readonly description: string;
  readonly schema?: z.ZodType;
  readonly contentType?: string;
  /** Headers always sent, by name: what each says. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers sent only in some answers (a next page's cursor), by name: what each says and when it comes. */
  readonly optionalHeaders?: Readonly<Record<string, string>>;
}

/** Parsed inputs handed to a handler. */
export interface RouteInput<P, Q, B> {
  readonly req: Request;
  readonly res: Response;
  readonly params: P;
  readonly query: Q;
  readonly body: B;
}

export interface RouteSpec<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
> {
  readonly method: Method;
  /** Express path, e.g. `/api/projects/:projectId`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: string;
  readonly params?: P;
  readonly query?: Q;
  readonly body?: B;
  /** Whether the body is optional (default: required when `body` is given). */
  readonly bodyOptional?: boolean;
  readonly answers: Readonly<Record<number, AnswerSpec>>;
  /**
   * Checks that run before any input is validated (e.g. who may call the route); each either
   * calls `next()` or passes an error to it.
   */
  readonly guards?: readonly RequestHandler[];
  /**
   * A mutation that always runs on this instance, also with SERVICE_WRITE_UPSTREAM set
   * (issue 10, item 1): `POST /api/internal/bus`, whose guard judges the TCP peer, which a
   * forwarded request would replace with this instance's own address.
   */
  readonly localOnly?: boolean;
  readonly handler: (input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>) => unknown;
}

/**
 * A request matched against the declared routes (issue 10, item 1): the one decision that the
 * token check, the write proxy, the request log and the dispatcher all use, so that every
 * spelling of a path that reaches a route is treated as that route everywhere.
 */
export interface RouteMatch {
  /** The declared route (for HEAD, the GET route that answers it). */
  readonly spec: RouteSpec;
  /** Path parameters, percent-decoded as find-my-way decodes them; never empty. */
  readonly params: Readonly<Record<string, string>>;
}

/**
 * The path of a match in one spelling: the declared template with each parameter
 * percent-encoded (`/api/takes/a%2Fb/action`). Every spelling the router takes for the same
 * route and parameters gives the same canonical path, and the router matches it back to them.
 * A parameter of dots only (`.`, `..`) is encoded too (`%2E%2E`): the path holds no
 * dot-segment that a server or proxy on the way (RFC 3986, 5.2.4) would remove, turning it into
 * another route.
 */
export function canonicalPath(m: RouteMatch): string {
  return m.spec.path.replace(/:([A-Za-z_$][\w$]*)/g, (_, name: string) => {
    const segment = encodeURIComponent(m.params[name] ?? '');
    return segment === '.' || segment === '..' ? segment.replace(/\./g, '%2E') : segment;
  });
}

/** Options of {@link Api.document}. */
export interface DocumentOptions {
  /**
   * The bearer token scheme (api-decisions.md, "Network and safety defaults"). The scheme is
   * always declared; when `required` (CONSOLE_API_TOKEN is set) every operation that
   * `isOpen` does not name requires it and documents the 401, and `queryTokenPath` (the event
   * stream) also accepts the token as `?token=`.
   */
  readonly bearer?: {
    readonly required: boolean;
    readonly isOpen: (method: string, path: string) => boolean;
    readonly queryTokenPath?: string;
  };
}

/**
 * The 422s of the JSON body parser (app.ts, json-depth.ts), which every route with a body
 * answers before its own validation.
 */
const BODY_REJECTIONS =
  'a body that is not JSON (`json_invalid`, `content_type`, `body_encoding`), nested too deep (`json_too_deep`), or holding a member named `__proto__` at any depth (`forbidden_member`, `loc` its path: such a body is refused and nothing is stored; `constructor`, `prototype` and every other name are ordinary members)';

/** The same, for operations that take no body. */
const BODY_REJECTIONS_SHORT = 'is not JSON, is nested too deep, or holds a member named `__proto__`';

/**
 * The answers given before any operation is chosen (`components.responses`, named by their
 * code; issue 11, item 9): from the catalogue's codes marked `unrouted` (errors.ts).
 */
function unroutedResponses(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const code of ANSWERED_CODES) {
    const entry = ERROR_CATALOGUE[code];
    if (entry.unrouted !== true) continue;
    const headers =
      code === 'method_not_allowed'
        ? { Allow: { required: true, description: 'The methods the path has, OPTIONS included.', schema: { type: 'string' } } }
        : code === 'unauthorized' || code === 'invalid_token'
          ? { 'WWW-Authenticate': { required: true, description: '`Bearer realm="console-backend"` (with `error="invalid_token"` for a wrong token).', schema: { type: 'string' } } }
          : undefined;
    out[code] = {
      description: `${entry.status}: ${entry.means}`,
      'x-status': entry.status,
      ...(headers ? { headers } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    };
  }
  return out;
}

/** Names of the security schemes in the document. */
export const BEARER_SCHEME = 'bearerAuth';
export const QUERY_TOKEN_SCHEME = 'queryToken';

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

/** The methods routes are declared with (GET routes also answer HEAD), in `Allow` order. */
const SERVED_METHODS: readonly HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'];

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

  /**
   * Renders the OpenAPI 3.1 document of every declared route (issue 11, item 9: it says what
   * the service sends). Besides each route's own answers it documents the framework's, on every
   * operation: 422 (validation of the query or body; and every request body, even where none is
   * expected, is parsed as JSON first) and 413 (a body past the bound), 421 (Host not served),
   * 500 (`internal`), 503 (state database faults for writes, the shutdown for all), 502 and 508
   * for the mutations a write proxy forwards, and 401 where the bearer token is required. The
   * security schemes are always declared and used: with the token unset, every operation but the
   * open ones says "bearer, or nothing". Each path item says which methods it has (others answer
   * 405); the answers given before any operation is chosen are `components.responses`, named by
   * their code.
   */
  document(info: { title: string; version: string; description: string }, options: DocumentOptions = {}): object {
    const paths: ZodOpenApiPathsObject = {};
    const bearer = options.bearer;
    const methodsOf = new Map<string, Set<string>>();
    for (const s of this.specs) {
      const path = s.path.replace(/:([A-Za-z_]+)/g, '{$1}');
      const protectedOp = bearer !== undefined && !bearer.isOpen(s.method, s.path);
      const answers: Record<number, AnswerSpec> = { ...s.answers };
      // A route's own 422 (a store file that cannot be used…) does not replace the body
      // parser's: every request body is read, and refused, before the route runs.
      const own422 = answers[422];
      if (own422?.schema !== undefined && own422.schema !== ErrorBody && !(own422.schema instanceof z.ZodUnion && own422.schema.options.includes(ErrorBody))) {
        answers[422] = {
          ...own422,
          description: `${own422.description} Also a request body${s.body ? '' : ' (this operation takes none: any body is read first)'} that ${BODY_REJECTIONS_SHORT} (\`validation_failed\`).`,
          schema: z.union([own422.schema, ErrorBody]),
        };
      }
      answers[422] ??= {
        description: s.body
          ? `Validation failure (\`validation_failed\`): \`detail\` lists \`{ loc, msg, type }\`; also ${BODY_REJECTIONS}.`
          : s.query
            ? `Validation failure (\`validation_failed\`): \`detail\` lists \`{ loc, msg, type }\`; also a request body (this operation takes none: any body is read first) that ${BODY_REJECTIONS_SHORT}.`
            : `A request body (this operation takes none: any body is read first) that ${BODY_REJECTIONS_SHORT} (\`validation_failed\`).`,
        schema: ErrorBody,
      };
      // `If-None-Match: *` names any current representation: a GET (or HEAD) answers 304, as RFC
      // 9110 (13.1.2) says, on routes without an ETag too (Express's freshness check). The event
      // stream writes its head itself and never answers 304.
      if (s.method === 'get' && s.answers[200]?.contentType !== 'text/event-stream') answers[304] ??= { description: 'Not modified: `If-None-Match: *` (any current representation, RFC 9110 13.1.2) or an ETag of the answer. No body.' };
      // Any body is read first: a client that goes away before its body is complete gets a 400
      // (`bad_request`), written to a connection that is closing.
      answers[400] ??= { description: 'The request body was cut short (the client went away while sending it) or its size could not be read (`bad_request`).', schema: ErrorBody };
      answers[413] ??= {
        description: s.body
          ? 'The body is larger than CONSOLE_MAX_BODY_BYTES (`body_too_large`).'
          : 'A request body (this operation takes none: any body is read first) larger than CONSOLE_MAX_BODY_BYTES (`body_too_large`).',
        schema: ErrorBody,
      };
      if (s.method !== 'get') {
        // Writes meet the state database's faults (src/state/errors.ts, stateDbFault).
        answers[507] ??= { description: 'The state database has no space left on its disk (`state_db_full`): nothing was stored.', schema: ErrorBody };
        answers[503] ??= {
          description:
            'The state database is busy (`state_db_busy`, with Retry-After), read-only or failing (`state_db_unavailable`), or in cluster mode cannot be reached (`state_db_unreachable`, with Retry-After): nothing was stored; or the service is shutting down (`shutting_down`).',
          schema: ErrorBody,
        };
      }
      // Every operation: a request that comes during the shutdown (shutdown-gate.ts).
      answers[503] ??= {
        description:
          'The service is shutting down (`shutting_down`); the connection is closed. In cluster mode, a read of console state, jobs or events while the PostgreSQL database cannot be reached (`state_db_unreachable`, with Retry-After).',
        schema: ErrorBody,
      };
      if (s.method !== 'get') {
        // Writes from a page of another site are refused before any operation runs (origin-check.ts).
        answers[403] ??= {
          description: 'A request from a browser page of another site (`cross_site_request`): its `Origin` is neither this service’s own nor an allowed CORS origin. Nothing was done.',
          schema: ErrorBody,
        };
      }
      if (s.method !== 'get' && s.localOnly !== true) {
        // Only with SERVICE_WRITE_UPSTREAM set: this operation is forwarded (write-proxy.ts).
        answers[502] ??= { description: 'Only with SERVICE_WRITE_UPSTREAM set: the upstream could not be reached, or cut the connection before answering (`upstream_unreachable`).', schema: ErrorBody };
        answers[508] ??= { description: 'Only with SERVICE_WRITE_UPSTREAM set: the upstream forwards back to this service (`proxy_loop`).', schema: ErrorBody };
      }
      // Every operation: the Host check runs before any (host-check.ts).
      answers[421] ??= {
        description:
          'The Host header (or an absolute request target) names a host this instance does not serve (DNS rebinding defence, `host_not_allowed`): bound to a loopback address it serves loopback names (localhost, 127.0.0.1, [::1], any port) and the hosts of CONSOLE_ALLOWED_HOSTS only; bound elsewhere, the same once CONSOLE_ALLOWED_HOSTS is set. Nothing was done.',
        schema: ErrorBody,
      };
      answers[500] ??= {
        description:
          'An error the service did not expect (`internal`: a bug, a module that cannot be loaded): the detail is generic and names nothing internal; `requestId` (also `X-Request-Id`) finds the error, with its stack, in the log.',
        schema: ErrorBody,
        headers: { 'X-Request-Id': 'The request’s id (sent on every answer): the `reqId` of its log lines.' },
      };
      if (protectedOp && bearer.required && !answers[401]) {
        answers[401] = {
          description: 'Missing (`unauthorized`) or wrong (`invalid_token`) bearer token.',
          schema: ErrorBody,
          headers: { 'WWW-Authenticate': '`Bearer realm="console-backend"` (with `error="invalid_token"` for a wrong token).' },
        };
      }
      const schemes: Record<string, string[]>[] = s.path === bearer?.queryTokenPath ? [{ [BEARER_SCHEME]: [] }, { [QUERY_TOKEN_SCHEME]: [] }] : [{ [BEARER_SCHEME]: [] }];
      const op: ZodOpenApiOperationObject = {
        operationId: s.operationId,
        summary: s.summary,
        ...(s.description ? { description: s.description } : {}),
        tags: [s.tag],
        // Always stated: open operations need nothing; the others the token when it is set, and
        // accept one or nothing when it is not (`{}`: no requirement).
        ...(bearer ? { security: !protectedOp ? [] : bearer.required ? schemes : [...schemes, {}] } : {}),
        requestParams: {
          ...(s.params ? { path: s.params as never } : {}),
          ...(s.query ? { query: s.query as never } : {}),
        },
        ...(s.body
          ? {
              requestBody: {
                // Also on routes that document their own 422s: every body meets the parser's checks first.
                description: `JSON (\`Content-Type: application/json\`); member names in camelCase or snake_case. Answered 422 before the route's own checks: ${BODY_REJECTIONS}.`,
                required: !s.bodyOptional,
                content: { 'application/json': { schema: s.body } },
              },
            }
          : {}),
        responses: Object.fromEntries(
          Object.entries(answers).map(([status, a]) => [
            status,
            {
              description: a.description,
              ...(a.headers || a.optionalHeaders
                ? {
                    // A 503 covers several causes (a busy database or store read, which say
                    // when to retry, and the shutdown, which does not): its Retry-After is
                    // optional. Other declared headers are always sent, but the optional ones.
                    headers: z.object(
                      Object.fromEntries([
                        ...Object.entries(a.headers ?? {}).map(([h, d]) => [h, status === '503' && h === 'Retry-After' ? z.string().optional().meta({ description: d }) : z.string().meta({ description: d })]),
                        ...Object.entries(a.optionalHeaders ?? {}).map(([h, d]) => [h, z.string().optional().meta({ description: d })]),
                      ]),
                    ),
                  }
                : {}),
              ...(a.schema || a.contentType
                ? { content: { [a.contentType ?? 'application/json']: { schema: a.schema ?? z.string() } } }
                : {}),
            },
          ]),
        ),
      };
      paths[path] = { ...(paths[path] ?? {}), [s.method]: op };
      const methods = methodsOf.get(path) ?? new Set<string>();
      methods.add(s.method.toUpperCase());
      if (s.method === 'get') methods.add('HEAD');
      methodsOf.set(path, methods);
    }
    const doc = createDocument({
      openapi: '3.1.0',
      info,
      servers: [{ url: '/', description: 'this service' }],
      paths,
      ...(bearer
        ? {
            components: {
              securitySchemes: {
                [BEARER_SCHEME]: {
                  type: 'http',
                  scheme: 'bearer',
                  description: `CONSOLE_API_TOKEN. ${bearer.required ? 'Set on this instance: required' : 'Not set on this instance: the API is open (a token is accepted and not checked)'}; never required by the open routes (health, readiness, config, this document).`,
                },
                [QUERY_TOKEN_SCHEME]: {
                  type: 'apiKey',
                  in: 'query',
                  name: 'token',
                  description: 'The same token as a query parameter, accepted by the event stream only (EventSource cannot set headers).',
                },
              },
            },
            security: bearer.required ? [{ [BEARER_SCHEME]: [] }] : [{ [BEARER_SCHEME]: [] }, {}],
          }
        : {}),
    }) as unknown as { paths: Record<string, Record<string, unknown>>; components?: Record<string, unknown> };
    // A path's other methods answer 405 with Allow (app.ts): said once per path item, which has
    // no place for responses of methods it does not have.
    for (const [path, methods] of methodsOf) {
      const item = doc.paths[path];
      const allow = [...SERVED_METHODS.filter((m) => methods.has(m)), 'OPTIONS'].join(', ');
      if (item) item.description = `Other methods answer 405 \`method_not_allowed\` with \`Allow: ${allow}\` (OPTIONS: the CORS preflight, 204).`;
    }
    doc.components = { ...doc.components, responses: unroutedResponses() };
    return doc;
  }

  /**
   * A key of the document {@link document} renders with these arguments: equal keys, equal
   * documents. Made of the routes' text (paths, ids, descriptions of operations and answers,
   * where configured values appear) without rendering: the zod schemas do not depend on the
   * configuration. The answer recorder writes one document per key (answer-recorder.ts).
   */
  documentKey(info: { title: string; version: string; description: string }, options: DocumentOptions = {}): string {
    const text = JSON.stringify([
      info,
      options.bearer ? [options.bearer.required, options.bearer.queryTokenPath ?? null] : null,
      this.specs.map((s) => [
        s.method,
        s.path,
        s.operationId,
        s.summary,
        s.description ?? null,
        s.tag,
        Boolean(s.params),
        Boolean(s.query),
        Boolean(s.body),
        s.bodyOptional ?? null,
        s.localOnly ?? null,
        Object.entries(s.answers).map(([k, a]) => [k, a.description, a.contentType ?? null, Object.keys(a.headers ?? {}), Object.entries(a.optionalHeaders ?? {})]),
      ]),
    ]);
    return createHash('sha256').update(text).digest('hex').slice(0, 24);
  }
}
