/**
 * `GET /api/metrics`: Prometheus text format from a registry per service
 * instance. Each family is scraped before and after the thing it counts.
 */
import { spawnSync } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/state/sqlite/db.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { SseClient } from '../helpers/sse.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

const PROJECT = 'harbor-lights';

const services: TestService[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
});

async function start(opts: Parameters<typeof startTestService>[0] = {}): Promise<TestService> {
  const t = await startTestService(opts);
  services.push(t);
  return t;
}

/** Samples of one scrape by `name{labels}` (labels as written, sorted by the exporter). */
type Samples = Map<string, number>;

async function scrape(t: TestService): Promise<Samples> {
  const res = await t.get('/api/metrics');
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  const out: Samples = new Map();
  for (const line of (await res.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const value = (s: Samples, key: string) => s.get(key) ?? 0;

/** Every sample of `name` whose labels include each of `labels` (`k="v"` strings), summed. */
function sum(s: Samples, name: string, ...labels: string[]): number {
  let total = 0;
  for (const [k, v] of s) {
    if (k !== name && !k.startsWith(`${name}{`)) continue;
    if (labels.every((l) => k.includes(l))) total += v;
  }
  return total;
}

describe('GET /api/metrics', () => {
  it('counts jobs started and exited ok, and shows every outcome from the start', async () => {
    const t = await start({ env: { DISPATCH_CLI: fixture('echo-argv.mjs') } });
    const before = await scrape(t);
    expect(value(before, 'console_jobs_started_total')).toBe(0);
    for (const outcome of ['ok', 'failed', 'lost']) expect(before.has(`console_jobs_exited_total{outcome="${outcome}"}`)).toBe(true);

    const res = await t.post('/api/proposals/generate', { project: PROJECT });
    const { proposalId } = (await res.json()) as { proposalId: string };
    await waitForJobEvents(t.url, proposalId);
    const after = await waitFor(async () => {
      const s = await scrape(t);
      return value(s, 'console_jobs_exited_total{outcome="ok"}') === 1 ? s : undefined;
    }, 'the exit to be counted');
    expect(value(after, 'console_jobs_started_total')).toBe(1);
    expect(value(after, 'console_jobs_exited_total{outcome="failed"}')).toBe(0);
  });

  it('shows running jobs, and counts a cancelled job as failed', async () => {
    const t = await start({ env: { DISPATCH_CLI: fixture('forever.mjs'), CONSOLE_KILL_GRACE_MS: '500' } });
    expect(value(await scrape(t), 'console_jobs_running')).toBe(0);
    const { proposalId } = (await (await t.post('/api/proposals/generate', { project: PROJECT })).json()) as { proposalId: string };
    expect(value(await scrape(t), 'console_jobs_running')).toBe(1);
    expect((await t.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);
    const after = await waitFor(async () => {
      const s = await scrape(t);
      return value(s, 'console_jobs_running') === 0 ? s : undefined;
    }, 'the job to end');
    expect(value(after, 'console_jobs_exited_total{outcome="failed"}')).toBe(1);
    expect(value(after, 'console_jobs_exited_total{outcome="ok"}')).toBe(0);
  });

  it('counts jobs found lost at start-up', async () => {
    const first = await startTestService();
    await first.stop();
    // A job the state database records as running, as if the service had died under it.
    const db = openStateDb(first.service.deps.config.stateDbPath);
    new JobsRepo(db).insert({ proposalId: 'gen_00000000beef', projectId: PROJECT, pid: null, argv: [], state: 'running', startedAt: new Date().toISOString() });
    db.close();
    const t = await start({ tmp: first.tmp });
    const s = await scrape(t);
    expect(value(s, 'console_jobs_exited_total{outcome="lost"}')).toBe(1);
    // The lost job's failure event is counted too.
    expect(value(s, 'console_events_published_total{severity="failure"}')).toBeGreaterThanOrEqual(1);
  });

  it('counts events by severity', async () => {
    const t = await start();
    const before = await scrape(t);
    for (const sev of ['info', 'success', 'failure', 'warning', 'fallback']) expect(before.has(`console_events_published_total{severity="${sev}"}`)).toBe(true);
    t.service.deps.bus.publish({ severity: 'fallback', scope: 'test/metrics', summary: 'a' });
    t.service.deps.bus.publish({ severity: 'fallback', scope: 'test/metrics', summary: 'b' });
    t.service.deps.bus.publish({ severity: 'warning', scope: 'test/metrics', summary: 'c' });
    const after = await scrape(t);
    const delta = (sev: string) => value(after, `console_events_published_total{severity="${sev}"}`) - value(before, `console_events_published_total{severity="${sev}"}`);
    expect(delta('fallback')).toBe(2);
    expect(delta('warning')).toBe(1);
    expect(delta('success')).toBe(0);
  });

  it('shows the open event streams', async () => {
    const t = await start();
    expect(value(await scrape(t), 'console_sse_subscribers')).toBe(0);
    const a = new SseClient(`${t.url}/api/events/stream`);
    const b = new SseClient(`${t.url}/api/events/stream`);
    // The first frame (`retry:`) is written once the stream is registered.
    await a.until((c) => c.frames.length > 0, 'the first stream to open');
    await b.until((c) => c.frames.length > 0, 'the second stream to open');
    expect(value(await scrape(t), 'console_sse_subscribers')).toBe(2);
    a.close();
    b.close();
    await waitFor(async () => (value(await scrape(t), 'console_sse_subscribers') === 0 ? true : undefined), 'the streams to close');
  });

  it('times requests by method, route template and status, never by raw URL', async () => {
    const t = await start();
    const before = await scrape(t);
    expect((await t.get(`/api/projects/${PROJECT}`)).status).toBe(200);
    expect((await t.get(`/api/projects/${PROJECT}`)).status).toBe(200);
    expect((await t.get('/api/projects/no-such-project')).status).toBe(404);
    expect((await t.get('/api/definitely/not/a/route')).status).toBe(404);
    const after = await scrape(t);
    const count = (s: Samples, route: string, status: string, method = 'GET') => sum(s, 'console_http_request_duration_seconds_count', `method="${method}"`, `route="${route}"`, `status="${status}"`);
    expect(count(after, '/api/projects/:projectId', '200') - count(before, '/api/projects/:projectId', '200')).toBe(2);
    expect(count(after, '/api/projects/:projectId', '404') - count(before, '/api/projects/:projectId', '404')).toBe(1);
    expect(count(after, '(unmatched)', '404') - count(before, '(unmatched)', '404')).toBe(1);
    // Buckets and sum are there too.
    expect(sum(after, 'console_http_request_duration_seconds_bucket', 'route="/api/projects/:projectId"', 'le="+Inf"')).toBe(3);
    expect(sum(after, 'console_http_request_duration_seconds_sum', 'route="/api/projects/:projectId"')).toBeGreaterThan(0);
    const keys = [...after.keys()].join('\n');
    expect(keys).not.toContain(PROJECT);
    expect(keys).not.toContain('no-such-project');
    expect(keys).not.toContain('definitely');
  });

  it('labels a request answered before routing (a 401) by its route template', async () => {
    const t = await start({ env: { CONSOLE_API_TOKEN: 'secret-token' } });
    expect((await t.get(`/api/projects/${PROJECT}`)).status).toBe(401);
    const s = await scrape(t).catch(() => undefined);
    expect(s).toBeUndefined(); // the scrape itself needs the token
    const res = await t.get('/api/metrics', { headers: { authorization: 'Bearer secret-token' } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toMatch(/console_http_request_duration_seconds_count\{method="GET",route="\/api\/projects\/:projectId",status="401"\} 1/);
  });

  it('reports the event-loop delay', async () => {
    const t = await start();
    const over = (s: Samples) => value(s, 'console_event_loop_delay_seconds_count') - value(s, 'console_event_loop_delay_seconds_bucket{le="0.25"}');
    const before = await scrape(t);
    // Hold the event loop (the service runs in this process) for 400 ms, inside a check-phase
    // callback as a synchronous piece of request handling would.
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        const until = Date.now() + 400;
        while (Date.now() < until) {
          // busy
        }
        resolve();
      }),
    );
    const after = await waitFor(async () => {
      const s = await scrape(t);
      return over(s) > over(before) ? s : undefined;
    }, 'a delay over 0.25 s to be recorded');
    expect(value(after, 'console_event_loop_delay_seconds_sum') - value(before, 'console_event_loop_delay_seconds_sum')).toBeGreaterThanOrEqual(0.3);
    // prom-client's own gauges are exported too.
    expect(after.has('nodejs_eventloop_lag_p99_seconds')).toBe(true);
  });

  it('keeps the counts of two instances in one process apart', async () => {
    const a = await start({ env: { DISPATCH_CLI: fixture('echo-argv.mjs') } });
    const b = await start({ env: { DISPATCH_CLI: fixture('echo-argv.mjs') } });
    await a.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    await a.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    await b.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    expect(value(await scrape(a), 'console_jobs_started_total')).toBe(2);
    expect(value(await scrape(b), 'console_jobs_started_total')).toBe(1);
  });

  it('counts forwarded mutations by outcome', async () => {
    const upstream = await start({ env: { DISPATCH_CLI: fixture('echo-argv.mjs') } });
    const front = await start({ env: { SERVICE_WRITE_UPSTREAM: upstream.url } });
    expect((await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true })).status).toBe(202);
    let s = await scrape(front);
    expect(value(s, 'console_write_proxy_requests_total{outcome="answered"}')).toBe(1);
    expect(sum(s, 'console_http_request_duration_seconds_count', 'method="POST"', 'route="/api/proposals/generate"', 'status="202"')).toBe(1);
    await upstream.stop();
    expect((await front.post('/api/proposals/generate', { project: PROJECT, dry_run: true })).status).toBe(502);
    s = await scrape(front);
    expect(value(s, 'console_write_proxy_requests_total{outcome="failed"}')).toBe(1);
  });

  it('passes promtool check metrics: no gauge named like a counter', async () => {
    const t = await start({ env: { DISPATCH_CLI: fixture('echo-argv.mjs') } });
    // Every family with samples: a job, reads, an error, a stream.
    const res = await t.post('/api/proposals/generate', { project: PROJECT, dry_run: true });
    await waitForJobEvents(t.url, ((await res.json()) as { proposalId: string }).proposalId);
    await t.get('/api/projects/nope');
    const text = await (await t.get('/api/metrics')).text();
    // prom-client's by-type gauges stay; their `_total` sums (gauges) are gone.
    expect(text).toMatch(/^# TYPE nodejs_active_handles gauge$/m);
    expect(text).not.toMatch(/^nodejs_active_\w+_total/m);

    const check = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
    if (check.error)
      throw new Error(
        `promtool is needed for this test and could not be run (${check.error.message}): install it (Debian package prometheus: apt-get install prometheus, which ships /usr/bin/promtool)`,
      );
    expect({ status: check.status, problems: `${check.stdout}${check.stderr}`.trim() }).toEqual({ status: 0, problems: '' });
  });
});
