/**
 * The Express app (style.md, practice 2): `createApp(deps)` wires middleware, one router
 * module per resource group and the error mapping, and returns the app without listening.
 */
import cors from 'cors';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler, type Response } from 'express';
import type { Logger } from '../ops/logger.js';
import { AnswerRecorder } from './answer-recorder.js';
import { bearerAuth } from './auth.js';
import { errorMiddleware, type ServerFault } from './error-middleware.js';
import { HttpError, MethodNotAllowedError, ValidationError } from './errors.js';
import { hostCheck, hostPolicy } from './host-check.js';
import { inSequence, runLayer } from './in-sequence.js';
import { originCheck } from './origin-check.js';
import { opsAssets, opsPage } from './ops-page.js';
import { bodyShapeError } from './json-depth.js';
import { requestId, requestIdOf } from './request-id.js';
import { requestLog } from './request-log.js';
import { requestMetrics } from './request-metrics.js';
import { Api } from './route.js';
import { routeTemplates } from './route-template.js';
import { beatRoutes } from './routes/beats.js';
import { clickRoutes } from './routes/clicks.js';
import { docsRoutes } from './routes/docs.js';
import { chatRoutes } from './routes/chat.js';
import type { AppDeps } from './routes/deps.js';
import { internalBusRoutes } from './routes/internal-bus.js';
import { mediaRoutes } from './routes/media.js';
import { slashRoutes } from './routes/slash.js';
import { terminalRoutes } from './routes/terminals.js';
import { eventRoutes } from './routes/events.js';
import { generationRoutes } from './routes/generation.js';
import { historyRoutes } from './routes/history.js';
import { jobRoutes } from './routes/jobs.js';
import { memoryRoutes } from './routes/memory.js';
import { metricsRoutes } from './routes/metrics.js';
import { openapiRoutes } from './routes/openapi.js';
import { projectRoutes } from './routes/projects.js';
import { proposalRoutes } from './routes/proposals.js';
import { selectionRoutes } from './routes/selection.js';
import { serviceRoutes } from './routes/service.js';
import { takeRoutes } from './routes/takes.js';
import { workspaceRoutes } from './routes/workspace.js';

export type { AppDeps } from './routes/deps.js';

/** What {@link createApp} builds. */
export interface CreatedApp {
  /**
   * The request listener to serve (`http.createServer(handler)`): the app's middleware, routes
   * and error answers (see {@link createApp}).
   */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /**
   * The server's options that make its requests and responses Express's from birth
   * (`http.createServer(serverOptions, handler)`, see {@link messageClasses}); a server created
   * without them still works, each request paying for a change of prototype.
   */
  readonly serverOptions: http.ServerOptions;
  /**
   * The Express application: its settings, and the request and response prototypes that the
   * classes of `serverOptions` carry (and that `handler` gives a request made otherwise).
   */
  readonly app: Express;
  readonly api: Api;
  /** The answer recorder (CONSOLE_RECORD_ANSWERS_DIR), or null when none is set. */
  readonly recorder: AnswerRecorder | null;
}

export interface CreateAppOptions {
  /** The service's log: a line per request, every 5xx with `code` and `reason`, unexpected errors once with their stack. Absent: stderr. */
  readonly logger?: Logger;
  /** Runs right after CORS: the shutdown gate (shutdown-gate.ts). */
  readonly gate?: RequestHandler;
}

/** Builds the app and the API description. */
export function createApp(deps: AppDeps, opts: CreateAppOptions = {}): CreatedApp {
  const app = express();
  app.disable('x-powered-by');
  // Cached bodies carry their own ETag; hashing every other answer is wasted work.
  app.set('etag', false);

  const api = new Api();
  const routeOf = routeTemplates(api);
  // Order matters. 0. The request id. 1. The request log and the request timer see every answer, 421s, 401s and
  // forwarded ones included. 2. The Host check, before anything that acts (a refused request
  // changes nothing). 3. CORS answers preflights before the token check. 4. The token. 5. The
  // write proxy, before the body parsers, so forwarded bodies stream through untouched. The ops
  // page's files (open: the page asks for the token itself) come before the token. The
  // token check, the proxy and the dispatcher decide on one match of the request (`api.match`).
  // Features that are off add no middleware: every layer costs every request.
  const chain: RequestHandler[] = [];
  // 0. The answer recorder, when on (the test suite): it sees every answer this app sends.
  const recorder = deps.config.recordAnswersDir === null ? null : new AnswerRecorder(deps.config.recordAnswersDir);
  if (recorder) chain.push(recorder.middleware(routeOf, (res) => deps.writeProxy.isUpstreamAnswer(res)));
  chain.push(requestId());
  const log = opts.logger ? requestLog(opts.logger, routeOf) : null;
  if (log) chain.push(log);
  chain.push(requestMetrics(deps.metrics.httpDuration, routeOf, deps.metrics.readLatencyInterval.record));
  const hosts = hostCheck(hostPolicy(deps.config));
  if (hosts) chain.push(hosts);
  chain.push(
    cors({
      origin: [...deps.config.cors.origins],
      methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
      // A console on another origin pages through the job history with these (GET /api/jobs).
      exposedHeaders: ['X-Next-Cursor', 'Link'],
      credentials: false,
    }),
  );
  // After CORS (a refused cross-site write is readable by nobody it was not meant for anyway).
  chain.push(originCheck(deps.config.cors.origins));
  // After CORS, so a browser can read the 503 of a request that arrives during the shutdown.
  if (opts.gate) chain.push(opts.gate);
  const assets = opsAssets(deps.config.opsPageDir);
  chain.push(opsPage(assets));
  if (deps.config.apiToken !== null) chain.push(bearerAuth(deps.config.apiToken, api));
  if (deps.config.writeUpstream !== null) chain.push(deps.writeProxy.middleware(api));
  chain.push(jsonBody(deps.config.http.maxBodyBytes));

  serviceRoutes(api, deps);
  historyRoutes(api, deps);
  const document = openapiRoutes(api, deps);
  docsRoutes(api, assets);
  metricsRoutes(api, deps);
  projectRoutes(api, deps);
  beatRoutes(api, deps);
  memoryRoutes(api, deps);
  eventRoutes(api, deps);
  generationRoutes(api, deps);
  jobRoutes(api, deps);
  proposalRoutes(api, deps);
  takeRoutes(api, deps);
  clickRoutes(api, deps);
  workspaceRoutes(api, deps);
  selectionRoutes(api, deps);
  internalBusRoutes(api, deps);
  terminalRoutes(api, deps);
  chatRoutes(api, deps);
  slashRoutes(api, deps);
  mediaRoutes(api, deps);

  chain.push(api.dispatch);
  // No route: a path some route has with other methods is a 405 naming them, any other a 404.
  const noRoute = (req: Request): HttpError => {
    const allowed = api.allowedMethods(req);
    return allowed.length > 0 ? new MethodNotAllowedError(req.method, req.path, allowed) : new HttpError('route_not_found', `no route for ${req.method} ${req.path}`);
  };
  const serverOptions = messageClasses(app);
  const handler = serve(app, inSequence(chain), noRoute, errorMiddleware(serverFaultLog(opts.logger, log !== null, routeOf), requestIdOf));
  // Every route is declared: the answers are checked against this document.
  recorder?.useDocument(document.key(), document.render);
  return { handler, serverOptions, app, api, recorder };
}

/**
 * The request listener: what Express's `app.handle` does for a request (the circular
 * references, the app's request and response prototypes, `res.locals`; the URL fields its
 * router sets), then `chain`, without Express's router. The app's middleware is one handler
 * (`inSequence`) and the routes are matched by `Api` (find-my-way): the router would only
 * match that one layer on every request, saving and restoring the request's URL, base URL and
 * parameters around it, about 5 µs of every request (issue 11, bench P1). A request `chain`
 * passes on without an error gets `noRoute`'s; every error (passed on, thrown, or a rejection)
 * goes to `onError`, which answers it; should that throw, the answer is a bare 500, or the
 * connection is destroyed when an answer had begun.
 * @returns the listener for `http.createServer`.
 */
export function serve(app: Express, chain: RequestHandler, noRoute: (req: Request) => Error, onError: ErrorRequestHandler): (req: IncomingMessage, res: ServerResponse) => void {
  const reqProto = app.request as object;
  const resProto = app.response as object;
  return (rawReq, rawRes) => {
    const req = rawReq as Request;
    const res = rawRes as Response;
    req.res = res;
    res.req = req;
    // Made by the classes of messageClasses(app), they have Express's methods already.
    // biome-ignore lint/suspicious/noPrototypeBuiltins: reqProto is Express's own prototype object, never a request's data.
    if (!reqProto.isPrototypeOf(req)) Object.setPrototypeOf(req, reqProto);
    // biome-ignore lint/suspicious/noPrototypeBuiltins: as above.
    if (!resProto.isPrototypeOf(res)) Object.setPrototypeOf(res, resProto);
    res.locals = Object.create(null) as Response['locals'];
    req.baseUrl = '';
    req.originalUrl = req.url;
    const failed = (err: unknown): void => {
      try {
        onError(err, req, res, () => {});
      } catch (fault) {
        process.emitWarning(`the error answer failed: ${String(fault)}`);
        if (res.headersSent) res.destroy();
        else res.writeHead(500, { 'Content-Type': 'text/plain; charset=utf-8' }).end('Internal Server Error');
      }
    };
    runLayer(chain, req, res, (err?: unknown) => failed(err === undefined || err === null ? noRoute(req) : err));
  };
}

/**
 * Node's request and response classes with Express's methods on their prototypes, for
 * `http.createServer`'s `IncomingMessage` and `ServerResponse` options. Express's own request
 * listener gives each request and response Express's prototype with `Object.setPrototypeOf`.
 * V8 then gives them maps of their own, and they outlive the young generation: a bare Node server
 * doing only that answered 29,000 requests a second instead of 73,000, its young-generation
 * collections took 1.8 ms instead of 0.2, and 70 MB a second went to the old generation
 * (bench/RESULTS.md, issue 11, P1).
 */
export function messageClasses(app: Express): http.ServerOptions {
  class ExpressRequest extends http.IncomingMessage {}
  class ExpressResponse extends http.ServerResponse {}
  // Once, at start-up: the chain becomes class → Express's (with `app`) → Node's.
  Object.setPrototypeOf(ExpressRequest.prototype, app.request);
  Object.setPrototypeOf(ExpressResponse.prototype, app.response);
  return { IncomingMessage: ExpressRequest, ServerResponse: ExpressResponse as typeof http.ServerResponse };
}

/**
 * Parses JSON bodies; a body with another content type is a 422 `content_type` (as a body that
 * is not JSON is a 422 `json_invalid`: every rejection of a body is a 413 or a 422, issue 6,
 * item 1). Besides clarity, this keeps
 * a cross-site page from posting "simple" (preflight-free) requests past the CORS allow-list.
 * Requests without a body (every read) pass straight through. A body nested deeper than
 * MAX_JSON_DEPTH levels is a 422 `json_too_deep`, one with a `__proto__` member at any depth
 * a 422 `forbidden_member` (json-depth.ts): so no route ever sees either.
 */
function jsonBody(limit: number): RequestHandler {
  const parse = express.json({ limit, strict: false });
  return (req, res, next) => {
    const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
    if (!hasBody) {
      next();
      return;
    }
    if (!req.is('application/json') && !req.is('+json')) {
      const type = req.headers['content-type'] ?? 'none';
      next(new ValidationError([{ loc: ['body'], msg: `request bodies must be JSON (Content-Type: application/json), not ${type}`, type: 'content_type' }]));
      return;
    }
    // Nested past MAX_JSON_DEPTH, or holding `__proto__`: a 422 here, before any step that
    // recurses or copies members by assignment (json-depth.ts).
    parse(req, res, (err?: unknown) => next(err ?? bodyShapeError(req.body)));
  };
}

/**
 * How 5xx answers are logged (issue 14, item 5): with a request log, its line (at error) carries
 * the `code` and `reason` (set by the error middleware); without one (below info), a line of
 * its own. An error the service did not expect is also logged once with its stack, the request's
 * id and URL (`unhandled error`).
 */
function serverFaultLog(logger: Logger | undefined, requestLogged: boolean, routeOf: (req: Request) => string) {
  return (req: Request, _res: Response, f: ServerFault): void => {
    const reqId = requestIdOf(req);
    if (f.internal) {
      if (logger) logger.error({ err: f.err, reqId, method: req.method, url: req.originalUrl }, 'unhandled error');
      else console.error(f.err);
    }
    if (logger && !requestLogged) {
      const route = routeOf(req);
      logger.error({ reqId, method: req.method, route, status: f.status, code: f.code, detail: f.detail, reason: f.reason }, `${req.method} ${route} ${f.status}`);
    }
  };
}
