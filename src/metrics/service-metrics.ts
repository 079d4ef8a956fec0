/**
 * The service's Prometheus metrics (`GET /api/metrics`, api-decisions.md §Service routes with
 * partial shape). One Registry per instance, never the global one, so two instances in a process never clash.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { SEVERITIES, type Severity } from '../bus/event.js';
import type { Supervisor } from '../supervisor/index.js';
import { sampleEventLoopDelay } from './event-loop-delay.js';
import type { FigureSources } from './history.js';
import { IntervalRecorder } from './interval-quantiles.js';

/** Outcome label of `console_jobs_exited_total`. */
export type JobOutcome = 'ok' | 'failed' | 'lost';

/** Outcome label of `console_write_proxy_requests_total`. */
export type ProxyOutcome = 'answered' | 'failed';

/** The part of the SSE hub the metrics read: the number of open streams. */
export interface StreamCount {
  readonly size: number;
}

/** prom-client's default gauges named like counters (`_total`), which `promtool check metrics` refuses; each sums a by-type gauge that stays. */
export const NON_COUNTER_TOTALS: readonly string[] = ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'];

/** Collectors of one instance: counters fed by `observe*` hooks, gauges read at scrape time. Families are prefixed `console_`. */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly jobsStarted: Counter;
  private readonly jobsExited: Counter<'outcome'>;
  private readonly events: Counter<'severity'>;
  /** Request durations in seconds; `route` is the route template, never the raw URL. */
  readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private readonly proxyRequests: Counter<'outcome'>;
  private readonly stopSampling: () => void;
  /** The event-loop delays of the history's current interval (history.ts). */
  readonly loopDelayInterval = new IntervalRecorder();
  /** The read latencies of the history's interval: GET answers but the event stream. */
  readonly readLatencyInterval = new IntervalRecorder();

  /** @param instance cluster mode: the `instance` label on every metric (cluster.md §Operations). */
  constructor(instance?: string) {
    const registers = [this.registry];
    if (instance !== undefined) this.registry.setDefaultLabels({ instance });
    collectDefaultMetrics({ register: this.registry });
    for (const name of NON_COUNTER_TOTALS) this.registry.removeSingleMetric(name);
    const loopDelay = new Histogram({
      name: 'console_event_loop_delay_seconds',
      help: 'How late a timer due every 20 ms ran: time the main thread was held by other work.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.stopSampling = sampleEventLoopDelay(loopDelay, 20, this.loopDelayInterval.record);
    this.jobsStarted = new Counter({ name: 'console_jobs_started_total', help: 'Generation jobs started since the service started.', registers });
    this.jobsExited = new Counter({
      name: 'console_jobs_exited_total',
      help: 'Generation jobs ended, by outcome: ok (rc 0), failed (any other rc or a signal), lost (found running after a restart).',
      labelNames: ['outcome'],
      registers,
    });
    this.events = new Counter({
      name: 'console_events_published_total',
      help: 'Bus events published since the service started, by severity.',
      labelNames: ['severity'],
      registers,
    });
    this.httpDuration = new Histogram({
      name: 'console_http_request_duration_seconds',
      help: 'HTTP request durations until the answer ended, by method, route template and status.',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.proxyRequests = new Counter({
      name: 'console_write_proxy_requests_total',
      help: 'Mutating requests forwarded to SERVICE_WRITE_UPSTREAM, by outcome: answered by the upstream, or failed (unreachable, cut).',
      labelNames: ['outcome'],
      registers,
    });
    // Every label value from the start: a family appearing only after the first failure blinds `rate()`.
    for (const outcome of ['ok', 'failed', 'lost'] as const) this.jobsExited.inc({ outcome }, 0);
    for (const severity of SEVERITIES) this.events.inc({ severity }, 0);
    for (const outcome of ['answered', 'failed'] as const) this.proxyRequests.inc({ outcome }, 0);
    this.reportEventsAtScrape();
  }

  private readonly published: Record<Severity, number> = { info: 0, success: 0, failure: 0, warning: 0, fallback: 0 };
  private publishedTotal = 0;

  /** The bus's publish counter (EventBusOptions.onCount): cheap on the hot path; prom-client catches up at scrape. */
  readonly countEvent = (severity: Severity, delta: 1 | -1): void => {
    this.published[severity] += delta;
    this.publishedTotal += delta;
  };

  /** Events published since start-up (GET /api/system-status, `events.publishedSinceStart`). */
  get eventsPublished(): number {
    return this.publishedTotal;
  }

  /** Events of one severity published since start-up. */
  publishedOf(severity: Severity): number {
    return this.published[severity];
  }

  private reportEventsAtScrape(): void {
    const reported: Record<string, number> = Object.fromEntries(SEVERITIES.map((s) => [s, 0]));
    const events = this.events;
    (events as unknown as { collect: () => void }).collect = () => {
      for (const severity of SEVERITIES) {
        const delta = this.published[severity] - (reported[severity] as number);
        if (delta > 0) events.inc({ severity }, delta);
        reported[severity] = this.published[severity];
      }
    };
  }

  /** Counts job starts and exits, and reports the running jobs at scrape time. */
  observeSupervisor(supervisor: Supervisor): void {
    supervisor.onTransition((job, trigger) => {
      if (trigger === 'accepted') this.jobsStarted.inc();
      else if (trigger === 'exit') this.jobsExited.inc({ outcome: job.state === 'exited ok' ? 'ok' : 'failed' });
    });
    // Output backpressure: counted by the gate, reported at scrape time.
    const gate = supervisor.gate;
    let pauses = 0;
    let pausedMs = 0;
    new Counter({
      name: 'console_job_output_pauses_total',
      help: 'Times the jobs’ output pipes stopped being read because the bus held CONSOLE_EVENT_BACKLOG_MAX events not yet stored (backpressure).',
      registers: [this.registry],
      collect() {
        const s = gate.stats();
        if (s.pauses > pauses) this.inc(s.pauses - pauses);
        pauses = s.pauses;
      },
    });
    new Counter({
      name: 'console_job_output_paused_seconds_total',
      help: 'Time the jobs’ output pipes were not read because of backpressure, in seconds.',
      registers: [this.registry],
      collect() {
        const s = gate.stats();
        if (s.pausedMs > pausedMs) this.inc((s.pausedMs - pausedMs) / 1000);
        pausedMs = s.pausedMs;
      },
    });
    new Gauge({
      name: 'console_jobs_running',
      help: 'Generation jobs running now.',
      registers: [this.registry],
      collect() {
        this.set(supervisor.runningCount);
      },
    });
  }

  /** Reports the open event streams at scrape time. */
  observeStreams(hub: StreamCount): void {
    new Gauge({
      name: 'console_sse_subscribers',
      help: 'Open event streams (GET /api/events/stream).',
      registers: [this.registry],
      collect() {
        this.set(hub.size);
      },
    });
  }

  /** The history's counters as Prometheus families at scrape time, so deploy/grafana and the charts agree. */
  observeFigures(f: Pick<FigureSources, 'outputLines' | 'eventsStored' | 'eventsDelivered' | 'slowClientsDropped' | 'replayPagesFromDatabase' | 'poolBusyMs' | 'poolThreads'>): void {
    const registers = [this.registry];
    const fromTotal = (name: string, help: string, read: () => number, scale = 1): void => {
      let reported = 0;
      new Counter({
        name,
        help,
        registers,
        collect() {
          const now = read();
          if (now > reported) this.inc((now - reported) * scale);
          reported = Math.max(reported, now);
        },
      });
    };
    fromTotal('console_job_output_lines_total', 'Output lines (stdout and stderr) of the generation jobs run here.', f.outputLines);
    fromTotal('console_events_stored_total', 'Events published here and stored in the state database.', f.eventsStored);
    fromTotal('console_sse_events_delivered_total', 'Event frames written to stream clients, live and replayed: one per event per client.', f.eventsDelivered);
    fromTotal('console_sse_slow_clients_dropped_total', 'Stream clients disconnected because their unsent bytes passed CONSOLE_SSE_MAX_QUEUE_BYTES.', f.slowClientsDropped);
    fromTotal(
      'console_sse_replay_pages_from_database_total',
      'Replay pages read from the state database: streams resumed from a point older than the replay memory (CONSOLE_SSE_REPLAY_MEMORY_BYTES).',
      f.replayPagesFromDatabase,
    );
    fromTotal(
      'console_worker_pool_busy_seconds_total',
      'Time the worker threads spent running tasks (store reads, synthesis), summed over threads; its rate over console_worker_pool_threads is the utilisation.',
      f.poolBusyMs,
      1 / 1000,
    );
    new Gauge({
      name: 'console_worker_pool_threads',
      help: 'Worker threads of the pool (CONSOLE_WORKER_THREADS).',
      registers,
      collect() {
        this.set(f.poolThreads());
      },
    });
  }

  /** Readiness at scrape time: `console_ready` and `console_readiness_check{check}` per check. */
  observeReadiness(readiness: { check(): Promise<{ readonly ready: boolean; readonly checks: readonly { readonly name: string; readonly ok: boolean }[] }> }): void {
    let last: Promise<{ ready: boolean; checks: readonly { name: string; ok: boolean }[] }> | null = null;
    const report = () => (last ??= readiness.check().finally(() => setImmediate(() => (last = null))));
    new Gauge({
      name: 'console_ready',
      help: 'Whether GET /api/ready answers 200 now: 1 when every check is ok, else 0.',
      registers: [this.registry],
      async collect() {
        this.set((await report()).ready ? 1 : 0);
      },
    });
    new Gauge({
      name: 'console_readiness_check',
      help: 'Each check of GET /api/ready now: 1 ok, 0 failing (store, dispatchTool, stateDatabase, workers).',
      labelNames: ['check'],
      registers: [this.registry],
      async collect() {
        for (const c of (await report()).checks) this.set({ check: c.name }, c.ok ? 1 : 0);
      },
    });
  }

  /** Cluster mode: `console_cluster_peer_up{peer}` as this instance sees each peer, so alerts name a missing one. */
  observeMembership(membership: { list(): Promise<readonly { readonly id: string; readonly alive: boolean }[]> }): void {
    new Gauge({
      name: 'console_cluster_peer_up',
      help: 'Cluster mode: each instance sharing the state database, as this one sees it: 1 alive (heartbeat within CONSOLE_INSTANCE_TIMEOUT_MS), 0 stopped beating (listed for an hour).',
      labelNames: ['peer'],
      registers: [this.registry],
      async collect() {
        this.reset();
        let instances: readonly { id: string; alive: boolean }[];
        try {
          instances = await membership.list();
        } catch {
          return;
        }
        for (const i of instances) this.set({ peer: i.id }, i.alive ? 1 : 0);
      },
    });
  }

  /** Counts jobs marked lost at start-up recovery (no transition listener sees them). */
  countLost(n: number): void {
    if (n > 0) this.jobsExited.inc({ outcome: 'lost' }, n);
  }

  /** Counts one forwarded mutation by outcome. */
  countProxied(outcome: ProxyOutcome): void {
    this.proxyRequests.inc({ outcome });
  }

  /** Stops the event-loop sampling timer. */
  close(): void {
    this.stopSampling();
  }

  /** `Content-Type` of {@link scrape} (Prometheus text format 0.0.4). */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The Prometheus text exposition of every family. */
  scrape(): Promise<string> {
    return this.registry.metrics();
  }
}
