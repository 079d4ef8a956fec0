/**
 * The in-memory history of the service's figures (src/metrics/history.ts) under a simulated
 * clock: hours of samples hold the memory of fifteen minutes (fixed rings, the window served),
 * counters become rates over the time that really passed, an interval with nothing to measure
 * is null, and `since` answers only the newer samples.
 */
import { describe, expect, it } from 'vitest';
import { HISTORY_FIGURES } from '../../src/metrics/history-figures.js';
import { HISTORY_WINDOW_MS, MetricsHistory, type FigureSources } from '../../src/metrics/history.js';
import type { IntervalQuantiles } from '../../src/metrics/interval-quantiles.js';

/** Sources whose totals and gauges a test sets, and a clock it moves. */
function fakeSources() {
  const state = {
    now: Date.UTC(2026, 10, 23, 12, 0, 0),
    running: 0,
    lines: 0,
    stored: 0,
    delivered: 0,
    clients: 0,
    drops: 0,
    pauses: 0,
    replays: 0,
    fallbacks: 0,
    busyMs: 0,
    threads: 2,
    loop: { count: 0, p50: null, p99: null } as IntervalQuantiles,
    reads: { count: 0, p50: null, p99: null } as IntervalQuantiles,
    rss: 100e6,
    heap: 20e6,
  };
  const sources: FigureSources = {
    runningJobs: () => state.running,
    outputLines: () => state.lines,
    eventsStored: () => state.stored,
    eventsDelivered: () => state.delivered,
    streamClients: () => state.clients,
    slowClientsDropped: () => state.drops,
    outputPauses: () => state.pauses,
    replayPagesFromDatabase: () => state.replays,
    fallbacksRaised: () => state.fallbacks,
    poolBusyMs: () => state.busyMs,
    poolThreads: () => state.threads,
    loopDelay: () => state.loop,
    readLatency: () => state.reads,
    memory: () => ({ rss: state.rss, heapUsed: state.heap }),
  };
  return { state, sources };
}

describe('the history of the figures', () => {
  it('holds fifteen minutes however long it runs: four hours of samples at 5 s keep 181 samples in memory fixed at the start', () => {
    const { state, sources } = fakeSources();
    const h = new MetricsHistory(sources, { intervalMs: 5000, now: () => state.now });
    expect(h.capacity).toBe(181);
    const bytes = h.memoryBytes;
    expect(bytes).toBe(181 * 8 * (HISTORY_FIGURES.length + 1));
    for (let i = 1; i <= 4 * 720; i++) {
      state.now += 5000;
      state.lines += 50;
      state.running = i % 7;
      h.sample();
      if (i % 720 === 0) {
        const snap = h.snapshot();
        expect(snap.times.length).toBeLessThanOrEqual(h.capacity);
        expect(snap.times.at(-1)).toBe(state.now);
        expect(state.now - (snap.times[0] as number)).toBeLessThanOrEqual(HISTORY_WINDOW_MS);
        expect(h.memoryBytes).toBe(bytes);
      }
    }
    const snap = h.snapshot();
    // The window, end to end: 15 minutes at 5 s are 181 samples, the oldest exactly 900 s old.
    expect(snap.times).toHaveLength(181);
    expect(snap.times[0]).toBe(state.now - HISTORY_WINDOW_MS);
    for (let k = 1; k < snap.times.length; k++) expect((snap.times[k] as number) - (snap.times[k - 1] as number)).toBe(5000);
    for (const f of HISTORY_FIGURES) expect(snap.series[f.name], f.name).toHaveLength(181);
    expect(new Set(snap.series.linesPerSecond)).toEqual(new Set([10]));
    expect(snap.series.runningJobs.at(-1)).toBe((4 * 720) % 7);
  });

  it('samples older than the window are not served, even before the ring is full (a slow interval)', () => {
    const { state, sources } = fakeSources();
    const h = new MetricsHistory(sources, { intervalMs: 60_000, now: () => state.now });
    for (let i = 0; i < 10; i++) {
      state.now += 60_000;
      h.sample();
    }
    // Then the clock jumps ten minutes without samples (a suspended machine).
    state.now += 10 * 60_000;
    const snap = h.snapshot();
    expect(snap.times.every((t) => t >= state.now - HISTORY_WINDOW_MS)).toBe(true);
    expect(snap.times).toHaveLength(6);
  });

  it('turns totals into rates over the time that passed, counts per interval, a ratio for the pool; null where nothing was measured', () => {
    const { state, sources } = fakeSources();
    const h = new MetricsHistory(sources, { intervalMs: 5000, now: () => state.now });
    // A late sample: 8 s instead of 5.
    state.now += 8000;
    state.lines += 400;
    state.stored += 440;
    state.delivered += 880;
    state.clients = 2;
    state.drops += 1;
    state.pauses += 3;
    state.replays += 2;
    state.fallbacks += 1;
    state.busyMs += 4000; // 2 threads for 8 s: 16 s of capacity, a quarter busy
    state.loop = { count: 400, p50: 0.001, p99: 0.12 };
    state.reads = { count: 30, p50: 0.004, p99: 0.05 };
    h.sample();
    // Then nothing: no read answered, no counter moved.
    state.now += 5000;
    state.loop = { count: 250, p50: 0.001, p99: 0.002 };
    state.reads = { count: 0, p50: null, p99: null };
    h.sample();
    const { times, series } = h.snapshot();
    expect(times).toHaveLength(2);
    expect(series).toMatchObject({
      linesPerSecond: [50, 0],
      eventsStoredPerSecond: [55, 0],
      eventsDeliveredPerSecond: [110, 0],
      streamClients: [2, 2],
      slowClientsDropped: [1, 0],
      outputPauses: [3, 0],
      replayPagesFromDatabase: [2, 0],
      fallbacksRaised: [1, 0],
      poolUtilization: [0.25, 0],
      eventLoopDelayP99: [0.12, 0.002],
      readLatencyP50: [0.004, null],
      readLatencyP99: [0.05, null],
      rssBytes: [100e6, 100e6],
      heapUsedBytes: [20e6, 20e6],
    });
  });

  it('answers only the samples after `since`', () => {
    const { state, sources } = fakeSources();
    const h = new MetricsHistory(sources, { intervalMs: 5000, now: () => state.now });
    const at: number[] = [];
    for (let i = 0; i < 5; i++) {
      state.now += 5000;
      at.push(state.now);
      h.sample();
    }
    expect(h.snapshot(at[2]).times).toEqual(at.slice(3));
    expect(h.snapshot(at[4]).times).toEqual([]);
    expect(h.snapshot(0).times).toEqual(at);
  });
});
