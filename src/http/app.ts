/**
 * The Express app (style.md, practice 2): `createApp(deps)` wires middleware, one router
 * module per resource group and the error mapping, and returns the app without listening.
 */
import cors from 'cors';
import express, { type Express, type RequestHandler } from 'express';
import { APP_VERSION } from '../main/config.js';
import { errorMiddleware, HttpError, type ErrorReporter } from './errors.js';
import { Api } from './route.js';
import { beatRoutes } from './routes/beats.js';
import { clickRoutes } from './routes/clicks.js';
import { chatRoutes } from './routes/chat.js';
import type { AppDeps } from './routes/deps.js';
import { internalBusRoutes } from './routes/internal-bus.js';
import { mediaRoutes } from './routes/media.js';
import { slashRoutes } from './routes/slash.js';
import { terminalRoutes } from './routes/terminals.js';
import { eventRoutes } from './routes/events.js';
import { generationRoutes } from './routes/generation.js';
import { jobRoutes } from './routes/jobs.js';
import { memoryRoutes } from './routes/memory.js';
import { projectRoutes } from './routes/projects.js';
import { proposalRoutes } from './routes/proposals.js';
import { selectionRoutes } from './routes/selection.js';
import { serviceRoutes } from './routes/service.js';
import { takeRoutes } from './routes/takes.js';
import { workspaceRoutes } from './routes/workspace.js';

export type { AppDeps } from './routes/deps.js';

export interface CreateAppOptions {
  readonly reportError?: ErrorReporter;
}

/** Builds the app and the API description. */
export function createApp(deps: AppDeps, opts: CreateAppOptions = {}): { app: Express; api: Api } {
  const app = express();
  app.disable('x-powered-by');
  // Cached bodies carry their own ETag; hashing every other answer is wasted work.
  app.set('etag', false);

  app.use(
    cors({
      origin: [...deps.config.cors.origins],
      methods: ['GET', 'POST', 'PUT', 'DELETE', 'OPTIONS'],
      credentials: false,
    }),
  );
  app.use(requireJsonBody);
  app.use(express.json({ limit: deps.config.http.maxBodyBytes, strict: false }));

  const api = new Api();
  serviceRoutes(api, deps);
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

  let document: object | undefined;
  api.router.get('/api/openapi.json', (_req, res) => {
    document ??= api.document({
      title: 'console-backend',
      version: APP_VERSION,
      description: 'HTTP/JSON backend of the episodic-video production console.',
    });
    res.json(document);
  });

  app.use(api.router);
  app.use((req, _res, next) => next(new HttpError(404, `no route for ${req.method} ${req.path}`)));
  app.use(errorMiddleware(opts.reportError ?? ((err) => console.error(err))));
  return { app, api };
}

/**
 * Bodies must be JSON: a body with another content type is a 415. Besides clarity, this keeps
 * a cross-site page from posting "simple" (preflight-free) requests past the CORS allow-list.
 */
const requireJsonBody: RequestHandler = (req, _res, next) => {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody && !req.is('application/json') && !req.is('+json')) {
    next(new HttpError(415, 'request bodies must be JSON (Content-Type: application/json)'));
    return;
  }
  next();
};
