/** Prometheus metrics of the service (prom-client, one registry per instance). */
export { ServiceMetrics, type JobOutcome, type ProxyOutcome, type StreamCount } from './service-metrics.js';
