/**
 * Every console-state route is in the OpenAPI document the service serves, with a summary,
 * its request body (when it has one) and its answers.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ store: 'empty' });
});
afterAll(async () => {
  await t.close();
});

const ROUTES: [string, string, number[], boolean][] = [
  ['post', '/api/proposals', [201, 422], true],
  ['get', '/api/proposals', [200, 422], false],
  ['get', '/api/proposals/{proposalId}/decisions', [200, 400], false],
  ['post', '/api/proposals/{proposalId}/approve', [200, 400, 422], true],
  ['post', '/api/proposals/{proposalId}/reject', [200, 400, 422], true],
  ['post', '/api/proposals/{proposalId}/defer', [200, 400, 422], true],
  ['post', '/api/proposals/{proposalId}/decision', [200, 400, 422], true],
  ['post', '/api/takes/{takeId}/action', [200, 400, 422], true],
  ['post', '/api/memory/{entryId}/toggle', [200, 400, 404, 422], true],
  ['post', '/api/clicks', [201, 404, 422], true],
  ['get', '/api/clicks', [200, 400, 422], false],
  ['get', '/api/workspace-state/{wid}', [200, 400, 404], false],
  ['put', '/api/workspace-state/{wid}', [200, 400, 409, 422], true],
  ['post', '/api/workspace-state/{wid}/report', [202, 400, 413, 422], true],
  ['get', '/api/workspace-state/{wid}/reports', [200, 400], false],
  ['get', '/api/selection', [200, 400, 422], false],
  ['put', '/api/selection', [200, 400, 422], true],
  ['get', '/api/recent', [200, 422], false],
];

it.each(ROUTES)('%s %s is documented', async (method, path, statuses, hasBody) => {
  const doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { summary?: string; requestBody?: unknown; responses: Record<string, unknown> }>>;
  };
  const op = doc.paths[path]?.[method];
  expect(op, `${method} ${path}`).toBeDefined();
  expect(op!.summary).toEqual(expect.any(String));
  expect(op!.requestBody !== undefined).toBe(hasBody);
  for (const s of statuses) expect(Object.keys(op!.responses), `${method} ${path} ${s}`).toContain(String(s));
});

it('documents the fallback counts of the system status', async () => {
  const doc = (await (await fetch(`${t.url}/api/openapi.json`)).json()) as Record<string, any>;
  const schema = JSON.stringify(doc.paths['/api/system-status'].get.responses['200']);
  expect(schema).toContain('fallbacks');
});
