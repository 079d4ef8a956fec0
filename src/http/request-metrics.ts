/**
 * Records the duration of every request in `console_http_request_duration_seconds`
 * (issue 4, item 8), labelled by method, route template and status.
 */
import type { Request, RequestHandler } from 'express';
import type { Histogram } from 'prom-client';

/**
 * The middleware, registered first so it also times 401s, CORS preflights and forwarded
 * mutations. A stream is timed until it ends (by either side); a request whose client went
 * away before any answer was sent is recorded with status `aborted`.
 */
export function requestMetrics(histogram: Histogram<'method' | 'route' | 'status'>, routeOf: (req: Request) => string): RequestHandler {
  return (req, res, next) => {
    const end = histogram.startTimer();
    // 'close' comes last in every case (after 'finish' when the answer completed): one listener.
    res.once('close', () => {
      end({ method: req.method, route: routeOf(req), status: res.headersSent ? String(res.statusCode) : 'aborted' });
    });
    next();
  };
}
