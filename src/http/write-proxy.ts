/**
 * The write proxy (service-spec.md §Cross-cutting behaviour): with SERVICE_WRITE_UPSTREAM set,
 * every matched mutation but local-only ones is forwarded unchanged and the upstream's answer
 * streamed back. The router's match decides, and the upstream gets the canonical path, so it runs
 * exactly the route decided here. The upstream is the authority: local body checks do not apply.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { IncomingMessage, ServerResponse } from 'node:http';
import net, { type Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { RequestHandler, Response } from 'express';
import { sendError } from './error-middleware.js';
import { HttpError } from './errors.js';
import { canonicalPath, type Api, type RouteMatch } from './route.js';

/** Whether a matched request is forwarded: a non-GET declared route that is not `localOnly`; unmatched ones never. */
export function isForwardedMutation(route: RouteMatch | null): boolean {
  return route !== null && route.spec.method !== 'get' && route.spec.localOnly !== true;
}

/** The target sent upstream: the canonical path ({@link canonicalPath}) and the query as sent (fragment dropped). */
export function forwardedTarget(route: RouteMatch, url: string): string {
  const q = url.search(/[?#]/);
  return canonicalPath(route) + (q !== -1 && url[q] === '?' ? url.slice(q).replace(/#.*$/s, '') : '');
}

/** This hop's `Forwarded` element (RFC 7239): the TCP peer, the Host asked for, the protocol. */
function forwardedElement(req: IncomingMessage): string {
  const peer = req.socket.remoteAddress;
  const node = peer === undefined ? 'unknown' : net.isIPv6(peer) ? `"[${peer}]"` : peer;
  const host = req.headers.host;
  const proto = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  return `for=${node}${host ? `;host=${quotedString(host)}` : ''};proto=${proto}`;
}

/** A value as an RFC 7230 quoted-string. */
function quotedString(v: string): string {
  return `"${v.replace(/["\\]/g, '\\$&')}"`;
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
  private forwarded = 0;
  private answered = 0;
  private failures = 0;
  private lastFailure: WriteProxyStatus['lastFailure'] = null;
  /** Names this instance in `Via`, so a proxy loop (an upstream pointing back here) is refused. */
  private readonly via = `1.1 console-backend-${randomBytes(4).toString('hex')}`;
  /** Answers already failed: a cut can be reported by both the request and the answer. */
  private readonly failed = new WeakSet<object>();
  /** Answers that are the upstream's (status, headers, body), not this instance's. */
  private readonly relayed = new WeakSet<object>();

  /** @param upstream an http(s) URL without a trailing slash, or null for local mutations. */
  constructor(
    readonly upstream: string | null,
    private readonly options: WriteProxyOptions = {},
  ) {}

  /**
   * Express middleware: forwards the mutations `api` matches, passes everything else on.
   * Mount it after the token check and before the body parsers (forwarded bodies stream
   * through untouched).
   */
  middleware(api: Pick<Api, 'match'>): RequestHandler {
    return this.upstream === null ? (_req, _res, next) => next() : this.build(this.upstream, api);
  }

  /**
   * Whether `res` carries the upstream's answer (its status, headers and body), not one this
   * instance made: the answer recorder leaves it to the upstream's own document
   * (answer-recorder.ts). False for this instance's 502 and 508.
   */
  isUpstreamAnswer(res: object): boolean {
    return this.relayed.has(res);
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

  private build(upstream: string, api: Pick<Api, 'match'>): RequestHandler {
    // Loaded only with an upstream: http-proxy and its dependencies are about 10 MB of an
    // instance's memory that local mutations never use (issue 11, P6).
    const { createProxyMiddleware } = createRequire(import.meta.url)('http-proxy-middleware') as typeof import('http-proxy-middleware');
    const proxy = createProxyMiddleware<IncomingMessage, ServerResponse>({
      target: upstream,
      changeOrigin: true, // the upstream sees its own host name in Host
      // The caller in X-Forwarded-For/-Proto/-Port, each appended to what the client sent, and
      // X-Forwarded-Host (the client's own when it sent one); `Forwarded` is set below.
      xfwd: true,
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
          this.relayed.add(res);
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
      const route = api.match(req);
      if (route === null || !isForwardedMutation(route)) {
        next();
        return;
      }
      if (req.get('via')?.includes(this.via)) {
        next(new HttpError('proxy_loop', `write proxy loop: SERVICE_WRITE_UPSTREAM (${upstream}) forwards back to this service`));
        return;
      }
      this.forwarded++;
      // Set on the incoming headers, which http-proxy copies: a header set on the outgoing
      // request in its `proxyReq` event can come after a streamed body already sent them.
      req.headers.via = req.headers.via ? `${req.headers.via}, ${this.via}` : this.via;
      // The front checked the browser's Origin (origin-check.ts); the upstream, reached under
      // its own host name (changeOrigin), would take this front's origin for another site's.
      delete req.headers.origin;
      // The client's address for the upstream (its own peer is this instance), after any
      // elements a proxy before this one added; the upstream never takes the request as
      // coming from its own machine (internal-bus.ts).
      const hop = forwardedElement(req);
      req.headers.forwarded = req.headers.forwarded ? `${req.headers.forwarded}, ${hop}` : hop;
      // The route decided here, in its one spelling: the upstream runs exactly this route
      // (http-proxy would otherwise pass on the raw path, collapsing doubled slashes on the way).
      req.url = forwardedTarget(route, req.url);
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
      sendError(res as Response, new HttpError('upstream_unreachable', detail, { cause: err }));
    }
  }
}
