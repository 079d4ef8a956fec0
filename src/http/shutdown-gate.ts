/**
 * The HTTP side of a graceful stop (api-decisions.md §Network and safety defaults). Once closed:
 * answers in flight finish with `Connection: close`; new requests on old connections get 503
 * `shutting_down`; {@link stopListening} refuses new connections but leaves open ones, since
 * closing a seemingly idle keep-alive connection races a request being sent on it.
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { answerOf, HttpError } from './errors.js';
import { addToRequestLine } from './request-log.js';

/** Poll interval of {@link ShutdownGate.drained}: only runs during a shutdown. */
const DRAIN_POLL_MS = 10;

/** The refusal, from the catalogue (`shutting_down`), made once. */
const REFUSAL_ANSWER = answerOf(new HttpError('shutting_down', 'the service is shutting down'));
const REFUSAL = JSON.stringify(REFUSAL_ANSWER.body);

export class ShutdownGate {
  private readonly inFlight = new Set<ServerResponse>();
  private closing = false;
  private refusedCount = 0;

  /** An early middleware of the app: tracks the requests in flight, refuses late ones. */
  readonly middleware = (req: IncomingMessage, res: ServerResponse, next: () => void): void => {
    if (this.closing) {
      this.refuse(req, res);
      return;
    }
    this.inFlight.add(res);
    res.once('close', () => this.inFlight.delete(res));
    next();
  };

  /** Requests answered 503 because they arrived during the shutdown. */
  get refused(): number {
    return this.refusedCount;
  }

  /** Starts the stop: later requests are refused; answers in flight close their connection. */
  close(): void {
    this.closing = true;
    for (const res of this.inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
  }

  /** Resolves once every answer in flight was written (streams once ended), or at `ceilingMs`. @returns answers still unwritten. */
  async drained(ceilingMs: number): Promise<number> {
    const until = Date.now() + ceilingMs;
    for (;;) {
      let pending = 0;
      for (const res of this.inFlight) if (!res.writableEnded) pending++;
      if (pending === 0 || Date.now() >= until) return pending;
      await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
    }
  }

  private refuse(req: IncomingMessage, res: ServerResponse): void {
    this.refusedCount++;
    res.shouldKeepAlive = false;
    // Every 5xx line of the request log says why.
    addToRequestLine(res, { code: REFUSAL_ANSWER.body.code, reason: String(REFUSAL_ANSWER.body.detail) });
    const answer = () => {
      if (res.headersSent || res.destroyed) return;
      res.writeHead(REFUSAL_ANSWER.status, {
        ...REFUSAL_ANSWER.headers,
        'Content-Type': 'application/json; charset=utf-8',
        'Content-Length': Buffer.byteLength(REFUSAL),
        Connection: 'close',
      });
      res.end(REFUSAL);
    };
    // The body is read to its end first: closing a connection with unread bytes resets it,
    // and the client could lose the answer.
    if (req.readableEnded) {
      answer();
      return;
    }
    req.once('end', answer);
    req.once('error', () => res.destroy());
    req.resume();
  }
}

/** Stops listening without closing open connections, which `http.Server.close` does to "idle" ones (Node 19+). */
export function stopListening(server: Server): void {
  net.Server.prototype.close.call(server);
}
