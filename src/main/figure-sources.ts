// The history's figures and their Prometheus families (src/metrics/history.ts), read from the built parts, nothing counted twice.
import type { Bus } from '../bus/bus.js';
import type { SseHub } from '../bus/sse.js';
import type { FigureSources } from '../metrics/history.js';
import { mainMemory } from '../ops/memory.js';
import type { ServiceMetrics } from '../metrics/index.js';
import type { Supervisor } from '../supervisor/index.js';
import type { SynthesisPool } from '../workers/pool.js';

export interface FigureParts {
  readonly supervisor: Supervisor;
  readonly bus: Bus;
  readonly sse: SseHub;
  readonly pool: SynthesisPool;
  readonly metrics: ServiceMetrics;
}

/** The sources of one instance's figures. */
export function figureSources({ supervisor, bus, sse, pool, metrics }: FigureParts): FigureSources {
  // A job leaves the running set and is counted here in one synchronous step (its exit transition),
  // so no reading sees it in both or in neither.
  let endedLines = 0;
  supervisor.onTransition((job, trigger) => {
    if (trigger === 'exit') endedLines += job.stdoutLines + job.stderrLines;
  });
  return {
    runningJobs: () => supervisor.runningCount,
    outputLines: () => {
      let lines = endedLines;
      for (const j of supervisor.runningJobs()) lines += j.stdoutLines + j.stderrLines;
      return lines;
    },
    eventsStored: () => Math.max(0, metrics.eventsPublished - bus.backlog),
    eventsDelivered: () => sse.delivered,
    streamClients: () => sse.size,
    slowClientsDropped: () => sse.slowDrops,
    outputPauses: () => supervisor.gate.stats().pauses,
    replayPagesFromDatabase: () => sse.replayStats().pagesFromDatabase,
    fallbacksRaised: () => metrics.publishedOf('fallback'),
    poolBusyMs: () => pool.busyMs(),
    poolThreads: () => pool.stats().threads,
    loopDelay: () => metrics.loopDelayInterval.take(),
    readLatency: () => metrics.readLatencyInterval.take(),
    memory: mainMemory,
  };
}
