/**
 * The write proxy (spec: Cross-cutting behaviour, item 2; issue 4, item 6). With
 * SERVICE_WRITE_UPSTREAM set, every mutating request under `/api` (POST, PUT, PATCH, DELETE)
 * except `POST /api/internal/bus` is forwarded, body and headers (`Authorization` included)
 * unchanged, to the upstream, and answered with the upstream's answer as it streams (status,
 * headers, body). Reads stay local. The upstream is the authority for mutations: the local
 * body checks (413, validation) are not applied to what is forwarded.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Request, RequestHandler, Response } from 'express';
import { createProxyMiddleware } from 'http-proxy-middleware';
import { routedPath } from './auth.js';
import { HttpError, sendError } from './errors.js';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * Mutations that always run locally. `POST /api/internal/bus` is the loopback-only route: a
 * forwarded request would reach the upstream from this service's own address and pass its
 * loopback check on behalf of any caller.
 */
const LOCAL_MUTATIONS: readonly string[] = ['POST /api/internal/bus'];

/** Whether a request is a mutation the proxy forwards (when an upstream is configured). */
export function isForwardedMutation(req: Request): boolean {
  if (!MUTATING.has(req.method)) return false;
  const p = routedPath(req);
  return (p === '/api' || p.startsWith('/api/')) && !LOCAL_MUTATIONS.includes(`${req.method} ${p}`);
}

/** What `GET /api/system-status` reports under `writeProxy`. */
export interface WriteProxyStatus {
  readonly enabled: boolean;
  /** SERVICE_WRITE_UPSTREAM, or null. */
  readonly upstream: string | null;
  /** Mutations sent to the upstream since start-up. */
  readonly forwarded: number;
  /** Of those, the ones the upstream answered (any status; an answer cut midway also counts as a failure). */
  readonly answered: number;
  /** Of those, the ones that failed: upstream unreachable, or the connection cut. */
  readonly failures: number;
  readonly lastFailure: { readonly at: string; readonly detail: string } | null;
}

export interface WriteProxyOptions {
  /** Called once per forwarded request with its outcome (metrics). */
  readonly onOutcome?: (outcome: 'answered' | 'failed') => void;
}

/** The proxy of one service instance and its counters. */
export class WriteProxy {
  /** Express middleware: forwards mutations, passes everything else on. Mount before the body parsers. */
  readonly middleware: RequestHandler;
  private forwarded = 0;
  private answered = 0;
  private failures = 0;
  private lastFailure: WriteProxyStatus['lastFailure'] = null;
  /** Names this instance in `Via`, so a proxy loop (an upstream pointing back here) is refused. */
  private readonly via = `1.1 console-backend-${randomBytes(4).toString('hex')}`;
  /** Answers already failed: a cut can be reported by both the request and the answer. */
  private readonly failed = new WeakSet<object>();

  /** @param upstream an http(s) URL without a trailing slash, or null for local mutations. */
  constructor(
    readonly upstream: string | null,
    private readonly options: WriteProxyOptions = {},
  ) {
    this.middleware = upstream === null ? (_req, _res, next) => next() : this.build(upstream);
  }

  status(): WriteProxyStatus {
    return {
      enabled: this.upstream !== null,
      upstream: this.upstream,
      forwarded: this.forwarded,
      answered: this.answered,
      failures: this.failures,
      lastFailure: this.lastFailure,
    };
  }

  private build(upstream: string): RequestHandler {
    const proxy = createProxyMiddleware<IncomingMessage, ServerResponse>({
      target: upstream,
      changeOrigin: true, // the upstream sees its own host name in Host
      xfwd: true, // and the caller in X-Forwarded-For/-Proto/-Host/-Port
      // No keep-alive agent: http-proxy then sends `Connection: close`. A reused idle socket
      // that the upstream closes at the same moment would fail a POST that cannot be retried.
      on: {
        proxyReq: (proxyReq, _req, res) => {
          // An answer the client stopped reading (a stream) stops the upstream request too.
          // (http-proxy does so on the request's deprecated 'aborted' event; this does not rely on it.)
          res.once('close', () => {
            if (!res.writableFinished) proxyReq.destroy();
          });
        },
        proxyRes: (proxyRes, _req, res) => {
          this.answered++;
          this.options.onOutcome?.('answered');
          // http-proxy pipes the answer and reports only errors of the request: an answer the
          // upstream cuts midway would leave the client waiting for the rest forever.
          proxyRes.once('close', () => {
            if (!proxyRes.complete) this.fail(upstream, new Error('the upstream cut its answer midway'), res);
          });
        },
        error: (err, _req, res) => this.fail(upstream, err as NodeJS.ErrnoException, res),
      },
    });
    return (req, res, next) => {
      if (!isForwardedMutation(req)) {
        next();
        return;
      }
      if (req.get('via')?.includes(this.via)) {
        next(new HttpError(508, `write proxy loop: SERVICE_WRITE_UPSTREAM (${upstream}) forwards back to this service`));
        return;
      }
      this.forwarded++;
      // Set on the incoming headers, which http-proxy copies: a header set on the outgoing
      // request in its `proxyReq` event can come after a streamed body already sent them.
      req.headers.via = req.headers.via ? `${req.headers.via}, ${this.via}` : this.via;
      void proxy(req, res, next);
    };
  }

  private fail(upstream: string, err: NodeJS.ErrnoException, res: ServerResponse | Socket): void {
    // The client left first (its close stopped the upstream request): not an upstream failure.
    if (res.destroyed || this.failed.has(res)) return;
    this.failed.add(res);
    this.failures++;
    const detail = `write upstream ${upstream} unreachable: ${err.message || err.code || 'connection failed'}`;
    this.lastFailure = { at: new Date().toISOString(), detail };
    this.options.onOutcome?.('failed');
    if (!('writeHead' in res)) {
      res.destroy();
    } else if (res.headersSent) {
      // Cut mid-answer: the client must not take a truncated body for a complete one.
      res.destroy();
    } else {
      // The answer object is Express's own: the middleware received it from the app.
      sendError(res as Response, new HttpError(502, detail));
    }
  }
}
