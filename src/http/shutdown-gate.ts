/**
 * The HTTP side of a graceful stop (api-decisions.md, "Network and safety defaults": on
 * SIGTERM stop accepting, …). Its middleware runs early in the app (after CORS) and, once
 * {@link ShutdownGate.close}d:
 * - requests already in flight finish, and their answers close the connection
 *   (`Connection: close`), so a client does not send another request on it;
 * - a request that arrives on a connection opened before the stop is answered at once
 *   `503 { detail: "the service is shutting down", code: "shutting_down" }`, also with
 *   `Connection: close`;
 * - {@link stopListening} refuses new connections but leaves the open ones be: closing a
 *   keep-alive connection that looks idle races with a request the client is sending on it,
 *   which would be cut without an answer. They are closed at the end, once every answer
 *   was written (see service.ts).
 */
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import net from 'node:net';
import { answerOf, HttpError } from './errors.js';

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

  /**
   * Resolves once every answer in flight has been written in full by its handler (event
   * streams count once ended), or after `ceilingMs`.
   * @returns the number of answers still unwritten at the ceiling.
   */
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

/**
 * Stops listening (new connections are refused) without closing the open ones, which
 * `http.Server.close` would do to those it deems idle (Node 19+). `server.close()` later
 * still does the rest of its work (its timers); the listener is closed already.
 */
export function stopListening(server: Server): void {
  net.Server.prototype.close.call(server);
}
