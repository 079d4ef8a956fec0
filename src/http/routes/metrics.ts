/**
 * `GET /api/metrics`: Prometheus text format (issue 4, item 8; api-decisions.md, "Service
 * routes with partial shape"). Protected by the bearer token when one is set.
 */
import { z } from 'zod';
import type { Api } from '../route.js';
import type { AppDeps } from './deps.js';

export function metricsRoutes(api: Api, { metrics }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/metrics',
    operationId: 'metrics',
    summary: 'Prometheus metrics',
    description:
      'Prometheus text exposition (format 0.0.4) of this instance: `console_jobs_started_total`, `console_jobs_exited_total{outcome="ok|failed|lost"}`, `console_jobs_running`, `console_events_published_total{severity}`, `console_sse_subscribers`, `console_http_request_duration_seconds{method,route,status}` (route is the template, e.g. `/api/projects/:projectId`), `console_write_proxy_requests_total{outcome}`, and the process and Node.js defaults, among them the event-loop delay (`nodejs_eventloop_lag_p99_seconds` …).',
    tag: 'Service',
    answers: {
      200: { description: 'The metrics.', contentType: 'text/plain; version=0.0.4', schema: z.string() },
    },
    handler: async ({ res }) => {
      const text = await metrics.scrape();
      res.set('Cache-Control', 'no-store').type(metrics.contentType).send(text);
    },
  });
}
