/** The history's figures in the ops page's order: names, base units, meaning; deploy/grafana draws the same Prometheus families. */

export const HISTORY_FIGURES = [
  { name: 'runningJobs', label: 'Running jobs', unit: 'jobs', description: 'Generation jobs running on the instance at the sample.', prometheus: 'console_jobs_running' },
  {
    name: 'linesPerSecond',
    label: 'Job output lines',
    unit: 'lines/s',
    description: 'Output lines (stdout and stderr) of the instance’s jobs per second over the interval.',
    prometheus: 'console_job_output_lines_total',
  },
  {
    name: 'eventsStoredPerSecond',
    label: 'Events stored',
    unit: 'events/s',
    description: 'Events the instance published and stored per second over the interval.',
    prometheus: 'console_events_stored_total',
  },
  {
    name: 'eventsDeliveredPerSecond',
    label: 'Events delivered',
    unit: 'events/s',
    description: 'Event frames written to the instance’s stream clients per second over the interval (one per event per client, replays included).',
    prometheus: 'console_sse_events_delivered_total',
  },
  { name: 'streamClients', label: 'Stream clients', unit: 'clients', description: 'Open event streams at the sample.', prometheus: 'console_sse_subscribers' },
  {
    name: 'slowClientsDropped',
    label: 'Slow clients dropped',
    unit: 'clients',
    description: 'Stream clients disconnected during the interval because their unsent bytes passed CONSOLE_SSE_MAX_QUEUE_BYTES.',
    prometheus: 'console_sse_slow_clients_dropped_total',
  },
  {
    name: 'outputPauses',
    label: 'Output pauses',
    unit: 'pauses',
    description: 'Times during the interval the jobs’ output stopped being read because the bus held CONSOLE_EVENT_BACKLOG_MAX events not yet stored (backpressure).',
    prometheus: 'console_job_output_pauses_total',
  },
  {
    name: 'eventLoopDelayP99',
    label: 'Event-loop delay p99',
    unit: 'seconds',
    description: 'The 99th percentile of how late a timer due every 20 ms ran during the interval: time the main thread was held.',
    prometheus: 'console_event_loop_delay_seconds',
  },
  {
    name: 'readLatencyP50',
    label: 'Read latency p50',
    unit: 'seconds',
    description: 'The median duration of the GET answers (the event stream excepted) that ended during the interval; null when none did.',
    prometheus: 'console_http_request_duration_seconds',
  },
  { name: 'readLatencyP99', label: 'Read latency p99', unit: 'seconds', description: 'The 99th percentile of the same.', prometheus: 'console_http_request_duration_seconds' },
  { name: 'rssBytes', label: 'Resident memory', unit: 'bytes', description: 'The process’s resident set size at the sample.', prometheus: 'process_resident_memory_bytes' },
  { name: 'heapUsedBytes', label: 'Heap used', unit: 'bytes', description: 'V8 heap in use at the sample.', prometheus: 'nodejs_heap_size_used_bytes' },
  {
    name: 'poolUtilization',
    label: 'Worker pool utilisation',
    unit: 'ratio',
    description: 'Share of the worker threads’ time spent running tasks (store reads, synthesis) over the interval, 0..1.',
    prometheus: 'console_worker_pool_busy_seconds_total',
  },
  {
    name: 'replayPagesFromDatabase',
    label: 'Replays from the database',
    unit: 'pages',
    description: 'Replay pages read from the state database during the interval (a stream resumed from a point older than the replay memory).',
    prometheus: 'console_sse_replay_pages_from_database_total',
  },
  {
    name: 'fallbacksRaised',
    label: 'Fallbacks raised',
    unit: 'events',
    description: 'Sanctioned fallbacks raised during the interval (events of severity `fallback`).',
    prometheus: 'console_events_published_total{severity="fallback"}',
  },
] as const;

/** The name of one figure. */
export type HistoryFigure = (typeof HISTORY_FIGURES)[number]['name'];
