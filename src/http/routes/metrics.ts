/** `GET /api/metrics`: Prometheus text (api-decisions.md §Service routes with partial shape); behind the token when one is set. */
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
      'Prometheus text exposition (format 0.0.4) of this instance: `console_jobs_started_total`, `console_jobs_exited_total{outcome="ok|failed|lost"}`, `console_jobs_running`, `console_events_published_total{severity}`, `console_sse_subscribers`, `console_http_request_duration_seconds{method,route,status}` (route is the template, e.g. `/api/projects/:projectId`), `console_write_proxy_requests_total{outcome}`, `console_event_loop_delay_seconds`, `console_job_output_pauses_total`, `console_job_output_paused_seconds_total`, the figures of the history (`console_job_output_lines_total`, `console_events_stored_total`, `console_sse_events_delivered_total`, `console_sse_slow_clients_dropped_total`, `console_sse_replay_pages_from_database_total`, `console_worker_pool_busy_seconds_total`, `console_worker_pool_threads`), readiness (`console_ready`, `console_readiness_check{check}`), in cluster mode `console_cluster_peer_up{peer}`, and the process and Node.js defaults, among them the event-loop delay (`nodejs_eventloop_lag_p99_seconds` …). The alerting rules and Grafana dashboard of deploy/ read them.',
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
