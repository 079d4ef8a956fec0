/**
 * One rule for identifiers, on every route: a malformed identifier in a JSON
 * body is a 422 like any other invalid member (an issue of type `invalid_id` whose `loc` names
 * the member); in the path or the query it is the identifier guard's 400 `invalid_id` (the
 * spec's rule for paths). Both say the same words; the OpenAPI document states the rule.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

const P = 'harbor-lights';
const BAD = '../etc';

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
});
afterAll(async () => {
  await t?.close();
});

async function send(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(t.url + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

/** Every body member that holds an identifier: method, path, a body with the malformed id, and the member's `loc`. */
const IN_BODIES: [string, string, Record<string, unknown>, (string | number)[]][] = [
  ['POST', '/api/proposals/generate', { project: BAD }, ['body', 'project']],
  ['POST', '/api/proposals/generate', { project: P, shotId: BAD }, ['body', 'shotId']],
  ['POST', `/api/generate/${P}`, { project: BAD }, ['body', 'project']],
  ['POST', '/api/takes/tk_0001/action', { projectId: BAD, action: 'rejected' }, ['body', 'projectId']],
  ['POST', '/api/clicks', { projectId: BAD, target: 'x' }, ['body', 'projectId']],
  ['PUT', `/api/selection?projectId=${P}`, { takeId: BAD }, ['body', 'takeId']],
  ['POST', '/api/ttyd/start', { projectId: BAD }, ['body', 'projectId']],
  ['POST', '/api/ttyd/stop', { projectId: BAD }, ['body', 'projectId']],
  ['POST', '/api/chat', { message: 'hi', projectId: BAD }, ['body', 'projectId']],
  ['POST', '/api/slash/dispatch', { command: '/help', projectId: BAD }, ['body', 'projectId']],
];

/** Identifiers in the query and in the path: the guard's 400. */
const IN_URLS: [string, string, string][] = [
  ['GET', `/api/beats/b01/takes?projectId=${encodeURIComponent(BAD)}`, 'projectId'],
  ['GET', `/api/beats/b01/lineage?projectId=${P}&takeId=..`, 'takeId'],
  ['GET', `/api/clicks?projectId=${encodeURIComponent(BAD)}`, 'projectId'],
  ['GET', `/api/selection?projectId=..`, 'projectId'],
  ['GET', `/api/ttyd/status?projectId=..`, 'project_id'],
  ['GET', `/api/ttyd/context-window?projectId=..`, 'project_id'],
  ['GET', '/api/projects/a..b', 'project_id'],
  ['POST', '/api/takes/a..b/action', 'take_id'],
  ['POST', '/api/generate/a..b', 'project'],
];

describe('identifiers', () => {
  it.each(IN_BODIES)('in a body: %s %s answers 422 with an invalid_id issue naming the member', async (method, path, body, loc) => {
    const r = await send(method, path, body);
    expect({ path, status: r.status, code: r.json.code }).toEqual({ path, status: 422, code: 'validation_failed' });
    const member = loc[loc.length - 1];
    expect(r.json.detail).toContainEqual({ loc, msg: expect.stringMatching(new RegExp(`^invalid ${member} ".*": expected 1-128 characters`)), type: 'invalid_id' });
  });

  it.each(IN_URLS)('in the path or the query: %s %s answers 400 invalid_id naming the parameter', async (method, path, name) => {
    const r = await send(method, path, method === 'POST' ? { project: P, projectId: P, action: 'rejected' } : undefined);
    expect({ path, status: r.status, code: r.json.code }).toEqual({ path, status: 400, code: 'invalid_id' });
    expect(r.json.detail).toMatch(new RegExp(`^invalid ${name} ".*": expected 1-128 characters`));
  });

  it('is stated in the OpenAPI document', async () => {
    const doc = (await (await t.get('/api/openapi.json')).json()) as { info: { description: string }; paths: any };
    expect(doc.info.description).toMatch(
      /in the path or the query answers 400 `invalid_id`.*in a JSON body answers 422 `validation_failed` with an issue `\{ loc: \["body", <member>\], msg, type: "invalid_id" \}`/s,
    );
    const start = doc.paths['/api/ttyd/start'].post;
    // Its only 400 is the framework's cut-short body (`bad_request`), never a malformed identifier.
    expect(start.responses['400']?.description ?? '').not.toMatch(/invalid_id/);
    expect(start.responses['422'].description).toMatch(/invalid_id/);
  });
});
