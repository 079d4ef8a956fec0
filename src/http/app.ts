// The Express app (style.md, practice 2): `createApp(deps)` wires middleware, one router module per resource
// group and the error mapping, and returns the app without listening.
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
  /** The request listener to serve (`http.createServer(handler)`). */
  readonly handler: (req: IncomingMessage, res: ServerResponse) => void;
  /** Options making requests and responses Express's from birth ({@link messageClasses}); optional, but each request then pays a prototype change. */
  readonly serverOptions: http.ServerOptions;
  /** The Express application, whose request and response prototypes the classes of `serverOptions` carry. */
  readonly app: Express;
  readonly api: Api;
  /** CONSOLE_RECORD_ANSWERS_DIR's recorder, or null. */
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
  // Order matters: the log and timer see every answer (421s, 401s, forwarded); the Host check comes before
  // anything that acts; CORS answers preflights before the token; the ops page's files (the page asks for the
  // token itself) before the token; the write proxy before the body parser, so forwarded bodies stream through.
  // Features that are off add no middleware: every layer costs every request.
  const chain: RequestHandler[] = [];
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
  // A path some route has with other methods is a 405 naming them, any other a 404.
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
 * The request listener: what Express's `app.handle` sets up, then `chain`, without Express's router, whose
 * one-layer match would cost every request its URL save and restore. A request `chain` passes on gets
 * `noRoute`'s error; every error goes to `onError`, and should that throw, a bare 500 (or a destroyed connection).
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
 * Node's request and response classes with Express's methods on their prototypes, for `http.createServer`'s
 * options: setting the prototype per request, as Express does, gives each object its own V8 map and costs
 * most of the throughput (bench/RESULTS.md).
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
 * Parses JSON bodies; another content type is a 422 `content_type`, which also keeps a cross-site page from
 * posting preflight-free requests past the CORS allow-list. Too deep, or holding `__proto__`: a 422 (json-depth.ts).
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
    // Before any step that recurses or copies members by assignment.
    parse(req, res, (err?: unknown) => next(err ?? bodyShapeError(req.body)));
  };
}

/** How 5xx answers are logged: in the request log's line when there is one, else a line of their own; an
 * unexpected error also once with its stack (`unhandled error`). */
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
