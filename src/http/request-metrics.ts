/** Request durations for `console_http_request_duration_seconds` by method, route template and status, and the history's read latencies. */
import type { Request, RequestHandler } from 'express';
import type { Histogram } from 'prom-client';

/** The one GET route whose duration is a stream's life, not an answer's latency. */
const STREAM_ROUTE = '/api/events/stream';

/**
 * The middleware, registered first so 401s, preflights and forwarded mutations are timed too. A
 * stream is timed until it ends; a client gone before any answer is recorded as `aborted`.
 * @param reads given each GET answer's duration (seconds) but the event stream's.
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
