/**
 * Records the duration of every request in `console_http_request_duration_seconds`
 * (issue 4, item 8), labelled by method, route template and status; and the read latencies of
 * the history's charts (src/metrics/history.ts).
 */
import type { Request, RequestHandler } from 'express';
import type { Histogram } from 'prom-client';

/** The one GET route whose duration is a stream's life, not an answer's latency. */
const STREAM_ROUTE = '/api/events/stream';

/**
 * The middleware, registered first so it also times 401s, CORS preflights and forwarded
 * mutations. A stream is timed until it ends (by either side); a request whose client went
 * away before any answer was sent is recorded with status `aborted`.
 * @param reads also given the duration (seconds) of each GET answer but the event stream's:
 *   the read latency of the history.
 */
export function requestMetrics(histogram: Histogram<'method' | 'route' | 'status'>, routeOf: (req: Request) => string, reads?: (seconds: number) => void): RequestHandler {
  return (req, res, next) => {
    const end = histogram.startTimer();
    // 'close' comes last in every case (after 'finish' when the answer completed): one listener.
    res.once('close', () => {
      const route = routeOf(req);
      const seconds = end({ method: req.method, route, status: res.headersSent ? String(res.statusCode) : 'aborted' });
      if (reads !== undefined && req.method === 'GET' && route !== STREAM_ROUTE) reads(seconds);
    });
    next();
  };
}
