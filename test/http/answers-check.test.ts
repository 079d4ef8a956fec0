/**
 * The check of recorded answers against the OpenAPI document: the recorder
 * (src/http/answer-recorder.ts) of a real service writes what it sends, the checker
 * (test/helpers/answers-check.ts) passes that recording, and flags each way an answer can
 * leave the document, shown on copies of real recorded answers changed by hand.
 *
 * This file's service records into a folder of its own, not the run's: the hand-made
 * mismatches below must not fail the run's own check (answers-setup.ts).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkRecordedAnswers, formatReport, type CheckReport } from '../helpers/answers-check.js';
import { startTestService } from '../helpers/service.js';

interface Line {
  meta: { m: string; r: string; s: number; t: string | null; n: number; h?: Record<string, string> };
  body: string;
}

let dir: string;
const scratch: string[] = [];
/** The doc line and the answer lines of the service's recording. */
let docLine: string;
let recorded: Line[];
/** The answers of a front whose write upstream answers what no document says. */
let relayedFile: string;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-answers-check-'));
  const t = await startTestService({ env: { CONSOLE_RECORD_ANSWERS_DIR: dir } });
  try {
    await (await t.get('/api/projects')).json();
    await (await t.get('/api/projects/no-such-project')).json();
    await (await t.get('/api/projects/bad..id')).json();
    await (await t.get('/api/no-such-route')).json();
    await (await fetch(`${t.url}/api/projects`, { method: 'DELETE' })).json();
    await (await t.post('/api/slash/dispatch', { command: '/nope' })).json();
    const etag = (await t.get('/api/projects')).headers.get('etag') ?? '';
    await (await t.get('/api/projects', { headers: { 'if-none-match': etag, 'cache-control': 'max-age=0' } })).arrayBuffer();
    await (await t.get('/api/health')).json();
    // Answers the framework gives on every operation or before any: a HEAD of an unknown path
    // (no body, so no code), `If-None-Match: *` on a route without an ETag (RFC 9110: 304), and
    // a request body a GET does not take that is not JSON (the parser's 422 on a route whose
    // own 422 is another shape).
    expect((await fetch(`${t.url}/api/no-such-route`, { method: 'HEAD' })).status).toBe(404);
    expect((await t.get('/api/system-status', { headers: { 'if-none-match': '*', 'cache-control': 'max-age=0' } })).status).toBe(304);
    expect(await rawGet(t.url, '/api/memory', 'not json')).toBe(422);
  } finally {
    // Every answer's line is written once its answer ended: all of them by the time it stopped.
    await t.close();
  }
  const files = fs.readdirSync(dir).filter((f) => f.startsWith('answers-'));
  expect(files).toHaveLength(1);
  // A front relaying a mutation to an upstream that is no console-backend (a teapot).
  const teapot = http.createServer((_req, res) => {
    res.writeHead(418, { 'content-type': 'application/json' });
    res.end('{"teapot":true}');
  });
  await new Promise<void>((resolve) => teapot.listen(0, '127.0.0.1', resolve));
  const front = await startTestService({ env: { CONSOLE_RECORD_ANSWERS_DIR: dir, SERVICE_WRITE_UPSTREAM: `http://127.0.0.1:${(teapot.address() as AddressInfo).port}` } });
  try {
    expect((await front.post('/api/slash/dispatch', { command: '/help' })).status).toBe(418);
    expect((await front.get('/api/health')).status).toBe(200);
  } finally {
    await front.close();
    await new Promise((resolve) => teapot.close(resolve));
  }
  relayedFile = fs.readdirSync(dir).find((f) => f.startsWith('answers-') && !files.includes(f)) as string;
  const lines = fs.readFileSync(path.join(dir, files[0] as string), 'utf8').split('\n');
  expect(lines.pop()).toBe('');
  docLine = lines.shift() as string;
  recorded = lines.map((l) => ({ meta: JSON.parse(l.slice(0, l.indexOf('\t'))), body: l.slice(l.indexOf('\t') + 1) }));
});
afterAll(() => {
  for (const d of [dir, ...scratch]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

/** Sends a GET with a JSON-typed body (fetch sends none on a GET); resolves to the status. */
function rawGet(base: string, target: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${target}`, { method: 'GET', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The recorded answer with this method, route and status. */
function answer(m: string, r: string, s: number): Line {
  const found = recorded.find((l) => l.meta.m === m && l.meta.r === r && l.meta.s === s);
  if (found === undefined) throw new Error(`no recorded answer ${m} ${r} ${s} in ${JSON.stringify(recorded.map((l) => l.meta))}`);
  return structuredClone(found);
}

/** Checks a recording of these answers (and an optional raw tail) against the service's document. */
function check(answers: readonly Line[], tail = ''): CheckReport {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'console-answers-case-'));
  scratch.push(d);
  for (const f of fs.readdirSync(dir).filter((f) => f.startsWith('doc-'))) fs.copyFileSync(path.join(dir, f), path.join(d, f));
  const text = [docLine, ...answers.map((a) => `${JSON.stringify(a.meta)}\t${a.body}`)].join('\n');
  fs.writeFileSync(path.join(d, 'answers-case.jsonl'), `${text}\n${tail}`);
  return checkRecordedAnswers(d);
}

const problems = (r: CheckReport) => r.mismatches.map((m) => `${m.answer}: ${m.problem}`);

describe('the check of recorded answers against the OpenAPI document', () => {
  it('records every answer of a real service, with its route template, and passes them', () => {
    expect(recorded.map((l) => `${l.meta.m} ${l.meta.r} ${l.meta.s}`)).toEqual([
      'GET /api/projects 200',
      'GET /api/projects/:projectId 404',
      'GET /api/projects/:projectId 400',
      'GET (unmatched) 404',
      'DELETE (unmatched) 405',
      'POST /api/slash/dispatch 422',
      'GET /api/projects 200',
      'GET /api/projects 304',
      'GET /api/health 200',
      'HEAD (unmatched) 404',
      'GET /api/system-status 304',
      'GET /api/memory 422',
    ]);
    expect(JSON.parse(answer('GET', '/api/memory', 422).body)).toMatchObject({ code: 'validation_failed' });
    expect(answer('DELETE', '(unmatched)', 405).meta.h).toMatchObject({ allow: 'GET, HEAD, OPTIONS' });
    expect(answer('GET', '/api/projects', 304).meta.h).toMatchObject({ etag: expect.any(String) });
    expect(JSON.parse(answer('GET', '/api/projects/:projectId', 404).body)).toMatchObject({ code: 'project_not_found' });
    const report = checkRecordedAnswers(dir);
    expect(problems(report)).toEqual([]);
    // The front's health answer is checked; its relayed 418 is the upstream's, counted apart.
    expect(report).toMatchObject({ files: 2, answers: recorded.length + 1, relayed: 1, cut: 0, withoutBody: 0 });
  });

  it('marks an answer a write proxy relayed from its upstream, and leaves it to the upstream', () => {
    const lines = fs.readFileSync(path.join(dir, relayedFile), 'utf8').trim().split('\n').slice(1);
    const metas = lines.map((l) => JSON.parse(l.slice(0, l.indexOf('\t'))) as Line['meta'] & { u?: true });
    expect(metas.map((m) => [m.m, m.r, m.s, m.u ?? false])).toEqual([
      ['POST', '/api/slash/dispatch', 418, true],
      ['GET', '/api/health', 200, false],
    ]);
    // Checked as this instance's own answer, it would not match.
    const a = answer('GET', '/api/health', 200);
    Object.assign(a.meta, { m: 'POST', r: '/api/slash/dispatch', s: 418 });
    expect(problems(check([a]))).toEqual([expect.stringMatching(/^POST \/api\/slash\/dispatch 418: status 418 is not documented/)]);
  });

  it('flags a status the operation does not document', () => {
    const a = answer('GET', '/api/projects', 200);
    a.meta.s = 418;
    expect(problems(check([a]))).toEqual([expect.stringMatching(/^GET \/api\/projects 418: status 418 is not documented for the operation/)]);
  });

  it('flags a body that does not match the schema', () => {
    const a = answer('GET', '/api/projects', 200);
    const projects = JSON.parse(a.body) as { id: unknown }[];
    expect(projects.length).toBeGreaterThan(0);
    (projects[0] as { id: unknown }).id = 5;
    a.body = JSON.stringify(projects);
    a.meta.n = a.body.length;
    expect(problems(check([a]))).toEqual([
      expect.stringMatching(/^GET \/api\/projects 200: the body does not match get \/api\/projects 200 application\/json: \/0\/id must be string \{"type":"string"\}; body \[/),
    ]);
  });

  it('flags a content type the answer does not document', () => {
    const a = answer('GET', '/api/health', 200);
    a.meta.t = 'text/html; charset=utf-8';
    expect(problems(check([a]))).toEqual([expect.stringMatching(/content type text\/html; charset=utf-8 is not documented for get \/api\/health 200/)]);
  });

  it('flags a missing required header (the 405 without Allow)', () => {
    const a = answer('DELETE', '(unmatched)', 405);
    delete a.meta.h?.allow;
    expect(problems(check([a]))).toEqual(['DELETE (unmatched) 405: components.responses.method_not_allowed requires the header Allow; it is missing']);
    // And on an operation's own answer: the 304 without its ETag.
    const b = answer('GET', '/api/projects', 304);
    delete b.meta.h?.etag;
    expect(problems(check([b]))).toEqual(['GET /api/projects 304: get /api/projects 304 requires the header ETag; it is missing']);
  });

  it('flags an error code answered with another status than the document gives it', () => {
    // The operation documents 400, but not for project_not_found.
    const a = answer('GET', '/api/projects/:projectId', 404);
    a.meta.s = 400;
    expect(problems(check([a]))).toEqual(['GET /api/projects/:projectId 400: code project_not_found answered with 400; the document gives it 404']);
    // The same before any operation was chosen (components.responses).
    const b = answer('GET', '(unmatched)', 404);
    b.meta.s = 400;
    expect(problems(check([b]))).toEqual([
      'GET (unmatched) 400: code route_not_found answered with 400; the document gives it 404',
      'GET (unmatched) 400: components.responses.route_not_found says 404, the answer is 400',
    ]);
  });

  it('flags a route the document does not have, and an unrouted answer without a listed code', () => {
    const a = answer('GET', '/api/health', 200);
    a.meta.r = '/api/not-declared';
    const b = answer('GET', '(unmatched)', 404);
    b.body = JSON.stringify({ detail: 'x', code: 'project_not_found' });
    expect(problems(check([a, b]))).toEqual([
      'GET /api/not-declared 200: route /api/not-declared is not in the document',
      'GET (unmatched) 404: code project_not_found answered before any operation, and components.responses does not list it',
    ]);
  });

  it('ignores and counts a last line cut short by a service killed mid-write', () => {
    const a = answer('GET', '/api/health', 200);
    const whole = `${JSON.stringify(a.meta)}\t${a.body}`;
    const report = check([a], whole.slice(0, whole.length - 7));
    expect(problems(report)).toEqual([]);
    expect(report).toMatchObject({ answers: 1, cut: 1 });
  });

  it('reports each distinct mismatch once, with how often it came', () => {
    const a = answer('GET', '/api/projects', 200);
    a.meta.s = 418;
    const text = formatReport(check([a, a, a]));
    expect(text).toMatch(/^3 of 3 recorded answers \(1 services\) do not match/);
    expect(text).toContain('GET /api/projects 418: status 418 is not documented for the operation');
    expect(text).toContain('(×3)');
  });
});
