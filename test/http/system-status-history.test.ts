/**
 * `GET /api/system-status/history` under a known load: a stream client, then one job printing
 * 2,200 lines (load-tool.mjs, `--shot flood2000`: 2,000 on stdout, 200 on stderr), then reads;
 * the samples taken meanwhile add up to exactly those lines, to as many events delivered as
 * stored (the one client receives every event), one stream client, at most one running job, and
 * read latencies once reads were answered. A paused client dropped as slow is one drop. The
 * service samples every 200 ms (CONSOLE_HISTORY_SAMPLE_MS): waits are for samples, not times.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { fixture, publishOn, startTestService, type TestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';

interface InstanceHistory {
  id: string | null;
  self: boolean;
  reachable: boolean;
  error: string | null;
  times: number[];
  series: Record<string, (number | null)[]>;
}
interface History {
  intervalSeconds: number;
  windowSeconds: number;
  figures: { name: string; unit: string }[];
  instances: InstanceHistory[];
}

let t: TestService;
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  t = await startTestService({ env: { DISPATCH_CLI: fixture('load-tool.mjs'), CONSOLE_HISTORY_SAMPLE_MS: '200' } });
});
afterAll(async () => {
  for (const c of closers) await c();
  await t?.close();
});

async function history(query = ''): Promise<History> {
  const res = await t.get(`/api/system-status/history${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as History;
}
const own = async (query = '') => (await history(query)).instances[0] as InstanceHistory;

/** Waits for a sample taken after `at` (ms since the epoch); returns the history then. */
const sampleAfter = (at: number) => waitFor(async () => (((await own()).times.at(-1) ?? 0) > at ? own() : undefined), `a sample after ${at}`);

/** The samples taken after `from` with the length of each one's interval, seconds. */
function intervalsAfter(h: InstanceHistory, from: number): { i: number; seconds: number }[] {
  const out: { i: number; seconds: number }[] = [];
  for (let i = 1; i < h.times.length; i++) if ((h.times[i - 1] as number) >= from) out.push({ i, seconds: ((h.times[i] as number) - (h.times[i - 1] as number)) / 1000 });
  return out;
}
const total = (h: InstanceHistory, name: string, from: number) => intervalsAfter(h, from).reduce((sum, { i, seconds }) => sum + ((h.series[name]?.[i] as number) ?? 0) * seconds, 0);

describe('GET /api/system-status/history', () => {
  it('describes itself: a sample every CONSOLE_HISTORY_SAMPLE_MS, 15 minutes, this instance only on SQLite, every figure with a unit', async () => {
    const h = await history();
    expect(h.intervalSeconds).toBe(0.2);
    expect(h.windowSeconds).toBe(900);
    expect(h.instances).toHaveLength(1);
    expect(h.instances[0]).toMatchObject({ id: null, self: true, reachable: true, error: null });
    expect(h.figures.map((f) => f.name)).toEqual(Object.keys(h.instances[0]?.series ?? {}));
    for (const f of h.figures) expect(f.unit, f.name).not.toBe('');
    expect(await history('?scope=instance')).toMatchObject({ instances: [{ id: null, self: true }] });
    expect((await t.get('/api/system-status/history?scope=everywhere')).status).toBe(422);
    expect((await t.get('/api/system-status/history?since=yesterday')).status).toBe(422);
  });

  it('adds up to the known load: 2,200 lines, as many events delivered as stored, one client, one job, read latencies', async () => {
    const client = new SseClient(`${t.url}/api/events/stream`);
    closers.push(() => client.close());
    // From the first sample that saw the client, every interval after it is the load's.
    const from = await waitFor(async () => {
      const h = await own();
      const i = h.series.streamClients?.indexOf(1) ?? -1;
      return i >= 0 ? (h.times[i] as number) : undefined;
    }, 'a sample with the stream client');
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights', shotId: 'flood2000' });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    await client.until((c) => c.events.some((e) => e.payload.proposal_id === proposalId && e.summary.startsWith('dispatch_cli exited')), 'the job’s exit on the stream');
    for (let i = 0; i < 20; i++) expect((await t.get('/api/health')).status).toBe(200);
    const readsDone = Date.now();
    // Two samples after the reads: the last interval holds nothing of the load any more.
    const h = await sampleAfter((await sampleAfter(readsDone)).times.at(-1) as number);
    expect(total(h, 'linesPerSecond', from)).toBeCloseTo(2200, 6);
    const stored = total(h, 'eventsStoredPerSecond', from);
    expect(stored).toBeGreaterThanOrEqual(2202); // the lines, the spawn and the exit
    expect(total(h, 'eventsDeliveredPerSecond', from)).toBeCloseTo(stored, 6);
    const after = intervalsAfter(h, from).map(({ i }) => i);
    expect(after.map((i) => h.series.streamClients?.[i])).toEqual(after.map(() => 1));
    expect(Math.max(...after.map((i) => h.series.runningJobs?.[i] as number))).toBeLessThanOrEqual(1);
    const p50s = h.series.readLatencyP50?.filter((v, i) => v !== null && (h.times[i] as number) >= from) as number[];
    const p99s = h.series.readLatencyP99?.filter((v, i) => v !== null && (h.times[i] as number) >= from) as number[];
    expect(p50s.length).toBeGreaterThan(0);
    p50s.forEach((p50, k) => {
      const p99 = p99s[k] as number;
      expect(p50 > 0 && p50 <= p99 && p99 < 60).toBe(true);
    });
    for (const v of h.series.poolUtilization ?? []) if (v !== null) expect(v >= 0 && v <= 1).toBe(true);
    expect((h.series.rssBytes?.at(-1) as number) > 10e6).toBe(true);
    expect((h.series.heapUsedBytes?.at(-1) as number) > 1e6).toBe(true);
    expect((h.series.eventLoopDelayP99?.at(-1) as number) >= 0).toBe(true);
    expect(total(h, 'slowClientsDropped', from)).toBe(0);
    // `since`: only the newer samples.
    const mid = h.times[Math.floor(h.times.length / 2)] as number;
    expect((await own(`?since=${mid}`)).times.every((at) => at > mid)).toBe(true);
  });

  it('counts a stream client dropped as slow once, in the interval it was dropped', async () => {
    const dropped = async () => ((await (await t.get('/api/system-status')).json()) as { bus: { slowClientsDropped: number } }).bus.slowClientsDropped;
    expect(await dropped()).toBe(0);
    const before = await own();
    const slow = net.connect(t.service.port, '127.0.0.1');
    closers.push(() => slow.destroy());
    slow.on('error', () => {});
    await new Promise((r) => slow.once('connect', r));
    slow.pause();
    slow.write('GET /api/events/stream HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n\r\n');
    const padding = 'x'.repeat(2000);
    // Past CONSOLE_SSE_MAX_QUEUE_BYTES (8 MiB) and the kernel's buffers, the client is dropped.
    await waitFor(async () => {
      for (let i = 0; i < 500; i++) publishOn(t, { severity: 'info', scope: 'test/history', summary: `flood ${i}`, detail: padding });
      await new Promise((r) => setImmediate(r));
      return (await dropped()) >= 1 ? true : undefined;
    }, 'the paused client to be dropped');
    const h = await sampleAfter(Date.now());
    const from = before.times.at(-1) as number;
    const drops = h.series.slowClientsDropped?.filter((_, i) => (h.times[i] as number) > from) as number[];
    expect(drops.reduce((a, b) => a + b, 0)).toBe(1);
  });
});
