// The charts of the last 15 minutes, in order: which figures of GET /api/system-status/history
// each draws, in what unit. The Grafana dashboard (deploy/grafana/console-backend.json) has the
// same panels under the same titles (a test compares them).
export const PANELS = [
  { key: 'running-jobs', title: 'Running jobs', figures: ['runningJobs'], unit: 'jobs' },
  { key: 'lines', title: 'Job output lines', figures: ['linesPerSecond'], unit: 'lines/s' },
  { key: 'events', title: 'Events stored and delivered', figures: ['eventsStoredPerSecond', 'eventsDeliveredPerSecond'], unit: 'events/s' },
  { key: 'stream-clients', title: 'Stream clients', figures: ['streamClients'], unit: 'clients' },
  { key: 'slow-clients', title: 'Slow clients dropped', figures: ['slowClientsDropped'], unit: 'clients' },
  { key: 'output-pauses', title: 'Output pauses', figures: ['outputPauses'], unit: 'pauses' },
  { key: 'loop-delay', title: 'Event-loop delay p99', figures: ['eventLoopDelayP99'], unit: 'seconds' },
  { key: 'read-latency', title: 'Read latency p50 and p99', figures: ['readLatencyP50', 'readLatencyP99'], unit: 'seconds' },
  { key: 'memory', title: 'Memory: resident and heap', figures: ['rssBytes', 'heapUsedBytes'], unit: 'bytes' },
  { key: 'pool', title: 'Worker pool utilisation', figures: ['poolUtilization'], unit: 'ratio' },
];

/** Short names of the figures in a legend. */
export const SERIES_NAMES = {
  runningJobs: 'running',
  linesPerSecond: 'lines',
  eventsStoredPerSecond: 'stored',
  eventsDeliveredPerSecond: 'delivered',
  streamClients: 'clients',
  slowClientsDropped: 'dropped',
  outputPauses: 'pauses',
  eventLoopDelayP99: 'p99',
  readLatencyP50: 'p50',
  readLatencyP99: 'p99',
  rssBytes: 'resident',
  heapUsedBytes: 'heap',
  poolUtilization: 'utilisation',
};
