// The write proxy (service-spec.md §Cross-cutting behaviour): with SERVICE_WRITE_UPSTREAM set, matched mutations
// but local-only ones are forwarded unchanged, at their canonical path, and the answer streamed back.
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
  /** Answered, any status (an answer cut midway also counts as a failure). */
  readonly answered: number;
  /** Upstream unreachable, or the connection cut. */
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
  private readonly relayed = new WeakSet<object>();

  /** @param upstream an http(s) URL without a trailing slash, or null for local mutations. */
  constructor(
    readonly upstream: string | null,
    private readonly options: WriteProxyOptions = {},
  ) {}

  /** Forwards the mutations `api` matches; mount after the token check, before the body parser. */
  middleware(api: Pick<Api, 'match'>): RequestHandler {
    return this.upstream === null ? (_req, _res, next) => next() : this.build(this.upstream, api);
  }

  /** Whether `res` carries the upstream's answer, not one this instance made (the answer recorder skips those). */
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
    // Loaded only with an upstream: http-proxy costs memory local mutations never use.
    const { createProxyMiddleware } = createRequire(import.meta.url)('http-proxy-middleware') as typeof import('http-proxy-middleware');
    const proxy = createProxyMiddleware<IncomingMessage, ServerResponse>({
      target: upstream,
      changeOrigin: true, // the upstream sees its own host name in Host
      // X-Forwarded-*, appended to the client's; `Forwarded` is set below.
      xfwd: true,
      // No keep-alive agent: an idle socket the upstream closes at the same moment would fail an unretriable POST.
      on: {
        proxyReq: (proxyReq, _req, res) => {
          // A client that stops reading stops the upstream request (not relying on the deprecated 'aborted').
          res.once('close', () => {
            if (!res.writableFinished) proxyReq.destroy();
          });
        },
        proxyRes: (proxyRes, _req, res) => {
          this.relayed.add(res);
          this.answered++;
          this.options.onOutcome?.('answered');
          // http-proxy reports only request errors: a cut answer would leave the client waiting forever.
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
      // On the incoming headers: set in `proxyReq` it may come after a streamed body sent them.
      req.headers.via = req.headers.via ? `${req.headers.via}, ${this.via}` : this.via;
      // Checked here (origin-check.ts); the upstream, under its own host name, would take it for another site's.
      delete req.headers.origin;
      // The client's address, so the upstream never takes the request as its own machine's (internal-bus.ts).
      const hop = forwardedElement(req);
      req.headers.forwarded = req.headers.forwarded ? `${req.headers.forwarded}, ${hop}` : hop;
      // The canonical path, so the upstream runs exactly the route decided here.
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
