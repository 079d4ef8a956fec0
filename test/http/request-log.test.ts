/**
 * Structured logs: one JSON line per request and per job transition on
 * stdout, at LOG_LEVEL. The compiled service runs as a separate process (build first) and its
 * stdout is read line by line.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';

const TOKEN = 'log-test-token-7c1e';
const PROJECT = 'harbor-lights';
const MARKER = 'BODY-MARKER-5d2a';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface LoggingService {
  readonly url: string;
  /** Every stdout line so far, parsed (a line that is not JSON fails the test). */
  lines(): Record<string, unknown>[];
  /** SIGTERM, then the exit; resolves with every stdout line. */
  stop(): Promise<Record<string, unknown>[]>;
}

/** Starts the compiled service with `env` on a temp copy of the sample store; its stdout is its log. */
async function startLoggingService(env: Record<string, string>): Promise<LoggingService> {
  const store = makeTempStore('sample');
  cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const svc = await startServiceProcess(store, { DISPATCH_CLI: fixture('echo-argv.mjs'), LOG_LEVEL: 'info', ...env }, (fn) => cleanups.push(fn));
  const lines = () =>
    svc
      .stdout()
      .split('\n')
      .filter((l) => l.trim() !== '')
      .map((l) => {
        try {
          return JSON.parse(l) as Record<string, unknown>;
        } catch {
          throw new Error(`not a JSON line on stdout: ${l}`);
        }
      });
  return {
    url: svc.url,
    lines,
    stop: async () => {
      svc.child.kill('SIGTERM');
      await svc.exited;
      return lines();
    },
  };
}

const requestLines = (lines: Record<string, unknown>[]) => lines.filter((l) => typeof l.route === 'string' && 'status' in l);

describe('request and job logs', () => {
  it('writes one line per request: method, route template, path, status, duration; no body, no credentials', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'info', CONSOLE_API_TOKEN: TOKEN });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await fetch(`${svc.url}/api/projects/${PROJECT}`, { headers: auth })).status).toBe(200);
    expect((await fetch(`${svc.url}/api/projects/${PROJECT}`)).status).toBe(401);
    const stream = await fetch(`${svc.url}/api/events/stream?token=${TOKEN}`);
    expect(stream.status).toBe(200);
    await stream.body?.cancel();
    const gen = await fetch(`${svc.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ project: PROJECT, model: MARKER }),
    });
    expect(gen.status).toBe(202);
    const { proposalId } = (await gen.json()) as { proposalId: string };
    await waitFor(async () => {
      const res = await fetch(`${svc.url}/api/jobs/${proposalId}`, { headers: auth });
      return ((await res.json()) as { state: string }).state !== 'running' ? true : undefined;
    }, 'the job to exit');

    const lines = await svc.stop();
    const reqs = requestLines(lines);
    const project = reqs.filter((l) => l.route === '/api/projects/:projectId');
    expect(project.map((l) => l.status).sort()).toEqual([200, 401]);
    for (const l of project) {
      expect(l).toMatchObject({ level: 30, method: 'GET', path: `/api/projects/${PROJECT}`, durationMs: expect.any(Number), reqId: expect.anything() });
      expect(l.msg).toBe(`GET /api/projects/:projectId ${String(l.status)}`);
    }
    expect(reqs.find((l) => l.route === '/api/proposals/generate')).toMatchObject({ method: 'POST', status: 202 });
    // The stream's line has its path without the query string (the token).
    expect(reqs.find((l) => l.route === '/api/events/stream')).toMatchObject({ path: '/api/events/stream', status: 200 });
    // One line per request: the status probes of the start-up wait are there too.
    expect(reqs.filter((l) => l.route === '/api/proposals/generate')).toHaveLength(1);
    expect(reqs.some((l) => l.route === '/api/system-status' && l.status === 200)).toBe(true);

    const text = lines.map((l) => JSON.stringify(l)).join('\n');
    expect(text).not.toContain(TOKEN);
    expect(text).not.toContain(MARKER);
    expect(text.toLowerCase()).not.toContain('authorization');
    for (const l of reqs) {
      expect(l).not.toHaveProperty('req');
      expect(l).not.toHaveProperty('res');
    }
  });

  it('logs a generation request’s episode and modality on its line, with the job’s proposal id', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'info' });
    const post = (body: unknown) => fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const given = await post({ project: PROJECT, episode: 3, modality: 'video_t2v' });
    const defaults = await post({ project: PROJECT });
    const forProject = await fetch(`${svc.url}/api/generate/${PROJECT}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ episode: 7 }) });
    const ids: string[] = [];
    for (const r of [given, defaults, forProject]) {
      expect(r.status).toBe(202);
      ids.push(((await r.json()) as { proposalId: string }).proposalId);
    }
    for (const id of ids) await waitForJobEvents(svc.url, id);
    const reqs = requestLines(await svc.stop()).filter((l) => l.method === 'POST');
    expect(reqs.find((l) => l.proposalId === ids[0])).toMatchObject({ route: '/api/proposals/generate', status: 202, episode: 3, modality: 'video_t2v' });
    // Absent: the spec's defaults (episode null, modality video_i2v).
    expect(reqs.find((l) => l.proposalId === ids[1])).toMatchObject({ route: '/api/proposals/generate', status: 202, episode: null, modality: 'video_i2v' });
    expect(reqs.find((l) => l.proposalId === ids[2])).toMatchObject({ route: '/api/generate/:project', status: 202, episode: 7, modality: 'video_i2v' });
  });

  it('writes one line per job transition: accepted and exited', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'info' });
    const gen = await fetch(`${svc.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: PROJECT }),
    });
    const { proposalId } = (await gen.json()) as { proposalId: string };
    await waitForJobEvents(svc.url, proposalId);
    const lines = await svc.stop();
    const mine = lines.filter((l) => (l.job as { proposalId?: string } | undefined)?.proposalId === proposalId);
    expect(mine.map((l) => [l.trigger, l.msg])).toEqual([
      ['accepted', 'job running'],
      ['exit', 'job exited ok'],
    ]);
    expect(mine[1]).toMatchObject({ level: 30, job: { proposalId, state: 'exited ok', rc: 0, pid: expect.any(Number) } });
  });

  it('honours LOG_LEVEL: at warn, no request or job lines', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'warn' });
    const gen = await fetch(`${svc.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: PROJECT }),
    });
    const { proposalId } = (await gen.json()) as { proposalId: string };
    await waitForJobEvents(svc.url, proposalId);
    await fetch(`${svc.url}/api/nope`);
    const lines = await svc.stop();
    expect(requestLines(lines)).toEqual([]);
    expect(lines.filter((l) => 'job' in l)).toEqual([]);
    for (const l of lines) expect(l.level as number).toBeGreaterThanOrEqual(40);
  });

  it('at warn, still logs each 5xx answer at level error (and nothing for other answers)', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'warn', DISPATCH_CLI: '/nonexistent/dispatch.js' });
    const res = await fetch(`${svc.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: PROJECT }),
    });
    expect(res.status).toBe(500);
    await fetch(`${svc.url}/api/health`);
    const lines = await svc.stop();
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ method: 'POST', route: '/api/proposals/generate', status: 500, detail: expect.stringContaining('/nonexistent/dispatch.js') });
    // Its reason, and the request's id.
    expect(errors[0]).toMatchObject({ code: 'tool_missing', reason: 'dispatch tool not found: /nonexistent/dispatch.js', reqId: res.headers.get('x-request-id') });
  });

  it('logs a 5xx at level error', async () => {
    const svc = await startLoggingService({ LOG_LEVEL: 'info', DISPATCH_CLI: '/nonexistent/dispatch.js' });
    const res = await fetch(`${svc.url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: PROJECT }),
    });
    expect(res.status).toBe(500);
    const lines = await svc.stop();
    expect(requestLines(lines).find((l) => l.route === '/api/proposals/generate')).toMatchObject({ level: 50, status: 500 });
    // Every 5xx line says why.
    expect(requestLines(lines).find((l) => l.route === '/api/proposals/generate')).toMatchObject({ code: 'tool_missing', reason: 'dispatch tool not found: /nonexistent/dispatch.js' });
  });
});
