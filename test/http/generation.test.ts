/**
 * The generation endpoints through the real server (spec: Endpoints, "Generation"; Events;
 * Errors; api-decisions.md, "Network and safety defaults"): real child processes, a real
 * state database, port 0.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents, waitForJobEvents, type EngineEvent } from '../helpers/events.js';
import { DISPATCH_TOOL, fixture, startTestService, type TestService } from '../helpers/service.js';

const SCOPE = 'engine/generation';
const PROJECT = 'harbor-lights';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function start(tool: string, env: Record<string, string> = {}): Promise<TestService> {
  t = await startTestService({ env: { DISPATCH_CLI: tool, CONSOLE_KILL_GRACE_MS: '300', ...env } });
  return t;
}

interface Accepted {
  proposalId: string;
  pid: number;
  scope: string;
}

/** Posts a generation request that must be accepted; returns the 202 body. */
async function generate(svc: TestService, body: unknown, route = '/api/proposals/generate'): Promise<Accepted> {
  const res = await svc.post(route, body);
  const json = (await res.json()) as Accepted;
  expect(res.status, JSON.stringify(json)).toBe(202);
  return json;
}

const generationEvents = (svc: TestService) => allEvents(svc.url, `scopePrefix=${SCOPE}`);

/** Asserts that no job, no process and no proposal was started. */
async function expectNothingStarted(svc: TestService): Promise<void> {
  expect(await (await svc.get('/api/jobs')).json()).toEqual([]);
  expect(await generationEvents(svc)).toEqual([]);
  expect(svc.service.db!.prepare('select count(*) as n from proposals').get()).toEqual({ n: 0 });
}

describe('POST /api/proposals/generate and /api/generate/{project}: the 202 answer', () => {
  it.each([
    ['/api/proposals/generate', { project: PROJECT }],
    [`/api/generate/${PROJECT}`, {}],
  ])('%s answers 202 with exactly proposalId, pid and scope', async (route, body) => {
    const svc = await start(fixture('print-lines.mjs'));

    const res = await svc.post(route, body);

    expect(res.status).toBe(202);
    const json = (await res.json()) as Accepted;
    expect(Object.keys(json).sort()).toEqual(['pid', 'proposalId', 'scope']);
    expect(json.proposalId).toMatch(/^gen_[0-9a-f]{12}$/);
    expect(Number.isInteger(json.pid) && json.pid > 0).toBe(true);
    expect(json.scope).toBe(SCOPE);
    await waitForJobEvents(svc.url, json.proposalId);
  });

  it('records the gen_ id as a pending GenerationProposal', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    const { proposalId } = await generate(svc, { project: PROJECT, shotId: 'sh010' });

    const row = svc.service.db!.prepare('select * from proposals where id = ?').get(proposalId) as Record<string, unknown>;
    expect(row).toMatchObject({ id: proposalId, kind: 'GenerationProposal', status: 'pending' });
    await waitForJobEvents(svc.url, proposalId);
  });

  it('gives every request its own proposal id and process', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    const answers = await Promise.all(Array.from({ length: 12 }, () => generate(svc, { project: PROJECT })));

    expect(new Set(answers.map((a) => a.proposalId)).size).toBe(12);
    expect(new Set(answers.map((a) => a.pid)).size).toBe(12);
    for (const a of answers) await waitForJobEvents(svc.url, a.proposalId);
  });
});

describe('the forwarded argument list (spec: Generation, rule 1)', () => {
  const tool = fixture('echo-argv.mjs');
  it.each([
    ['project only', '/api/proposals/generate', { project: PROJECT }, ['--project', PROJECT]],
    [
      'every member, camelCase',
      '/api/proposals/generate',
      { project: PROJECT, episode: 2, shotId: 'sh010', model: 'local-testsrc-v1', modality: 'image_t2i', dryRun: true },
      ['--project', PROJECT, '--shot', 'sh010', '--model', 'local-testsrc-v1', '--dry-run'],
    ],
    [
      'every member, snake_case',
      '/api/proposals/generate',
      { project: PROJECT, episode: 2, shot_id: 'sh010', model: 'm-2', modality: 'video_i2v', dry_run: true },
      ['--project', PROJECT, '--shot', 'sh010', '--model', 'm-2', '--dry-run'],
    ],
    ['model without shot', '/api/proposals/generate', { project: PROJECT, model: 'm1' }, ['--project', PROJECT, '--model', 'm1']],
    ['empty model and shot id', '/api/proposals/generate', { project: PROJECT, model: '', shotId: '' }, ['--project', PROJECT]],
    ['null members and dryRun false', '/api/proposals/generate', { project: PROJECT, episode: null, shotId: null, model: null, dryRun: false }, ['--project', PROJECT]],
    ['dry_run false (snake_case)', '/api/proposals/generate', { project: PROJECT, dry_run: false }, ['--project', PROJECT]],
    ['path project, empty body', `/api/generate/${PROJECT}`, {}, ['--project', PROJECT]],
    [
      'path project, snake_case body with the same project',
      `/api/generate/${PROJECT}`,
      { project: PROJECT, shot_id: 'sh020', dry_run: true, episode: 1 },
      ['--project', PROJECT, '--shot', 'sh020', '--dry-run'],
    ],
  ])('%s', async (_name, route, body, expected) => {
    const svc = await start(tool);

    const { proposalId, pid } = await generate(svc, body, route);

    const { all, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!.summary)).toEqual(expected);
    const spawned = all.find((e) => e.summary.startsWith('dispatch_cli spawned')) as EngineEvent;
    expect(spawned.summary).toBe(`dispatch_cli spawned pid=${pid}`);
    expect(spawned.payload).toEqual({ proposal_id: proposalId, argv: [process.execPath, tool, ...expected] });
  });
});

describe('generation events (spec: Events)', () => {
  it('a spawn event, one info event per stdout line, one warning per stderr line, then a success exit', async () => {
    const tool = fixture('print-lines.mjs');
    const svc = await start(tool);

    const { proposalId, pid } = await generate(svc, { project: PROJECT });

    const { all, exit } = await waitForJobEvents(svc.url, proposalId);
    const view = all.map((e) => ({ severity: e.severity, scope: e.scope, summary: e.summary, payload: e.payload }));
    expect(view[0]).toEqual({
      severity: 'info',
      scope: SCOPE,
      summary: `dispatch_cli spawned pid=${pid}`,
      payload: { proposal_id: proposalId, argv: [process.execPath, tool, '--project', PROJECT] },
    });
    const lineView = view.slice(1, -1);
    // stdout and stderr are separate pipes: their relative order is not defined, each one's is.
    expect(lineView.filter((e) => e.severity === 'info')).toEqual(['out 1', 'out 2', 'out 3'].map((summary) => ({ severity: 'info', scope: SCOPE, summary, payload: { source: 'dispatch_cli' } })));
    expect(lineView.filter((e) => e.severity === 'warning')).toEqual([{ severity: 'warning', scope: SCOPE, summary: 'err 1', payload: { source: 'dispatch_cli' } }]);
    expect(lineView).toHaveLength(4);
    expect(view.at(-1)).toEqual({ severity: 'success', scope: SCOPE, summary: 'dispatch_cli exited rc=0', payload: { proposal_id: proposalId, rc: 0 } });
    expect(exit).toBe(all.at(-1));
  });

  it('a nonzero exit code is a failure event with that rc', async () => {
    const svc = await start(fixture('exit-3.mjs'));

    const { proposalId } = await generate(svc, { project: PROJECT });

    const { exit, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(exit).toMatchObject({ severity: 'failure', scope: SCOPE, summary: 'dispatch_cli exited rc=3' });
    expect(exit.payload).toEqual({ proposal_id: proposalId, rc: 3 });
    expect(lines.map((e) => [e.severity, e.summary]).sort()).toEqual([
      ['info', 'about to fail'],
      ['warning', 'something went wrong'],
    ]);
  });

  it('the exit event follows every line event of its job, with thousands of lines on both pipes', async () => {
    const svc = await start(fixture('gen-many-lines.mjs'));

    const { proposalId } = await generate(svc, { project: PROJECT });

    const { all, exit, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(lines.filter((e) => e.severity === 'info')).toHaveLength(2000);
    expect(lines.filter((e) => e.severity === 'warning')).toHaveLength(2000);
    const exitId = BigInt(exit.id);
    expect(lines.every((e) => BigInt(e.id) < exitId)).toBe(true);
    expect(all.at(-1)).toBe(exit);
    expect(lines.filter((e) => e.severity === 'info').map((e) => e.summary)).toEqual(Array.from({ length: 2000 }, (_, i) => `out ${i + 1}`));
    // Nothing of this job is published after its exit.
    const later = (await generationEvents(svc)).filter((e) => BigInt(e.id) > exitId);
    expect(later).toEqual([]);
  });

  it('line text has undecodable bytes replaced and CRLF removed; over-long lines are cut to the configured bound', async () => {
    const svc = await start(fixture('gen-long-line.mjs'), { CONSOLE_LINE_MAX_BYTES: '256' });

    const { proposalId } = await generate(svc, { project: PROJECT });

    const { lines } = await waitForJobEvents(svc.url, proposalId);
    expect(lines.map((e) => e.summary)).toEqual(['bad \uFFFD\uFFFD bytes', 'crlf line', '', 'x'.repeat(256), 'y'.repeat(256), 'no newline at the end']);
    expect(lines.every((e) => e.severity === 'info')).toBe(true);
  });

  it('the real dispatch tool: a dry run exits 0 with its plan lines', async () => {
    const svc = await start(DISPATCH_TOOL);

    const { proposalId } = await generate(svc, { project: PROJECT, dryRun: true, episode: 1, modality: 'video_i2v' });

    const { exit, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(exit.severity).toBe('success');
    expect(exit.payload).toEqual({ proposal_id: proposalId, rc: 0 });
    expect(lines[0]).toMatchObject({ severity: 'info', summary: expect.stringMatching(/^plan: project=harbor-lights .*dry_run=true$/) });
  });

  it('the real dispatch tool: an unknown project exits 2 with its error line as a warning', async () => {
    const svc = await start(DISPATCH_TOOL);

    const { proposalId } = await generate(svc, { project: 'no-such-project' });

    const { exit, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(exit).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=2', payload: { proposal_id: proposalId, rc: 2 } });
    expect(lines.map((e) => [e.severity, e.summary])).toEqual([['warning', 'error: unknown project no-such-project']]);
  });
});

describe('generation errors (spec: Errors)', () => {
  it.each([
    ['/api/proposals/generate', { project: PROJECT }],
    [`/api/generate/${PROJECT}`, {}],
  ])('%s: a missing dispatch tool is a 500 naming the file, and nothing is started', async (route, body) => {
    const svc = await start('/nonexistent/dispatch-tool-missing.js');
    const missing = svc.config.dispatchCli;

    const res = await svc.post(route, body);

    expect(res.status).toBe(500);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toContain(missing);
    await expectNothingStarted(svc);
  });

  it('a directory in place of the tool file is a 500 too', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gen-tool-dir-'));
    try {
      const svc = await start(dir);

      const res = await svc.post('/api/proposals/generate', { project: PROJECT });

      expect(res.status).toBe(500);
      expect(((await res.json()) as { detail: string }).detail).toContain(svc.config.dispatchCli);
      await expectNothingStarted(svc);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a body project different from the path is a 422 "project path/body mismatch", and nothing is started', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    const res = await svc.post(`/api/generate/${PROJECT}`, { project: 'night-market' });

    expect(res.status).toBe(422);
    expect(await res.json()).toEqual({ detail: 'project path/body mismatch', code: 'project_mismatch' });
    await expectNothingStarted(svc);
  });

  it.each(['bad..id', '.hidden', '%2E%2E%2Fetc', 'a%20b', '-rf'])('a malformed path project %s is a 400 with the guard message, and nothing is started', async (segment) => {
    const svc = await start(fixture('print-lines.mjs'));

    const res = await svc.post(`/api/generate/${segment}`, {});

    expect(res.status).toBe(400);
    const { detail } = (await res.json()) as { detail: string };
    expect(detail).toMatch(/^invalid project /);
    await expectNothingStarted(svc);
  });

  it.each([
    ['a missing project', {}, ['body', 'project'], 'missing'],
    ['a number as project', { project: 5 }, ['body', 'project'], 'string_type'],
    ['a null project', { project: null }, ['body', 'project'], 'string_type'],
    ['a traversal project', { project: '../etc' }, ['body', 'project'], 'invalid_id'],
    ['a string as dryRun', { project: PROJECT, dryRun: 'yes' }, ['body', 'dryRun'], 'boolean_type'],
    ['a string as dry_run', { project: PROJECT, dry_run: 'true' }, ['body', 'dryRun'], 'boolean_type'],
    ['a string as episode', { project: PROJECT, episode: 'one' }, ['body', 'episode'], 'number_type'],
    ['a number as shotId', { project: PROJECT, shotId: 10 }, ['body', 'shotId'], 'string_type'],
    ['a traversal shot_id', { project: PROJECT, shot_id: '../x' }, ['body', 'shotId'], 'invalid_id'],
    ['a model starting with -', { project: PROJECT, model: '--dry-run' }, ['body', 'model'], 'value_error'],
    ['a model with a space', { project: PROJECT, model: 'two words' }, ['body', 'model'], 'value_error'],
    ['a number as modality', { project: PROJECT, modality: 3 }, ['body', 'modality'], 'string_type'],
  ])('%s is a 422 with loc/msg/type, and nothing is started', async (_name, body, loc, type) => {
    const svc = await start(fixture('print-lines.mjs'));

    const res = await svc.post('/api/proposals/generate', body);

    expect(res.status).toBe(422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[]; msg: unknown; type: unknown }[] };
    expect(Array.isArray(detail)).toBe(true);
    for (const issue of detail) {
      expect(Object.keys(issue).sort()).toEqual(['loc', 'msg', 'type']);
      expect(typeof issue.msg).toBe('string');
      expect(typeof issue.type).toBe('string');
    }
    expect(detail).toContainEqual({ loc, msg: expect.any(String), type });
    await expectNothingStarted(svc);
  });

  it('a model starting with - on the path endpoint is a 422 too', async () => {
    const svc = await start(fixture('echo-argv.mjs'));

    const res = await svc.post(`/api/generate/${PROJECT}`, { model: '-x' });

    expect(res.status).toBe(422);
    expect(((await res.json()) as { detail: unknown[] }).detail).toContainEqual({ loc: ['body', 'model'], msg: expect.any(String), type: 'value_error' });
    await expectNothingStarted(svc);
  });

  it('a request without a body is a 422 locating the body', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    const res = await svc.post('/api/proposals/generate');

    expect(res.status).toBe(422);
    const { detail } = (await res.json()) as { detail: { loc: unknown[] }[] };
    expect(detail[0]!.loc[0]).toBe('body');
    await expectNothingStarted(svc);
  });
});

describe('the cap on running jobs (api-decisions.md, Network and safety defaults)', () => {
  it('past the cap both endpoints answer 503 with Retry-After and start nothing; after the running job ends, a request is accepted', async () => {
    const svc = await start(fixture('forever.mjs'), { CONSOLE_MAX_RUNNING_JOBS: '1', CONSOLE_RETRY_AFTER_SECONDS: '7' });
    const first = await generate(svc, { project: PROJECT });

    for (const [route, body] of [
      ['/api/proposals/generate', { project: PROJECT }],
      [`/api/generate/${PROJECT}`, {}],
    ] as const) {
      const res = await svc.post(route, body);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('7');
      expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe('string');
    }
    const jobs = (await (await svc.get('/api/jobs')).json()) as { proposalId: string }[];
    expect(jobs.map((j) => j.proposalId)).toEqual([first.proposalId]);
    expect((await generationEvents(svc)).filter((e) => e.summary.startsWith('dispatch_cli spawned'))).toHaveLength(1);
    expect(svc.service.db!.prepare('select count(*) as n from proposals').get()).toEqual({ n: 1 });

    expect((await svc.post(`/api/jobs/${first.proposalId}/cancel`)).status).toBe(202);
    await waitForJobEvents(svc.url, first.proposalId);

    const second = await generate(svc, { project: PROJECT });
    expect(second.proposalId).not.toBe(first.proposalId);
  });
});
