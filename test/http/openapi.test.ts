/**
 * `GET /api/openapi.json`: a valid OpenAPI 3.1 document of every route,
 * generated from the zod schemas that validate requests. The routes are not listed here: the
 * tests walk what the Express app serves and what the Api declares, so routes added later are
 * held to the same rules.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import { ANSWERED_CODES, ERROR_CATALOGUE } from '../../src/http/errors.js';
import type { RouteSpec } from '../../src/http/route.js';
import { rawRequest } from '../helpers/raw.js';
import { REPO_ROOT, startTestService, type TestService } from '../helpers/service.js';

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is walked as plain JSON */
type Doc = any;

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];
const toDocPath = (p: string) => p.replace(/[:*]([A-Za-z_$][\w$]*)/g, '{$1}');
const key = (method: string, path: string) => `${method.toUpperCase()} ${path}`;

let open: TestService;
let locked: TestService;
let doc: Doc;
let lockedDoc: Doc;

beforeAll(async () => {
  open = await startTestService();
  locked = await startTestService({ env: { CONSOLE_API_TOKEN: 'doc-token' } });
  doc = await (await open.get('/api/openapi.json')).json();
  lockedDoc = await (await locked.get('/api/openapi.json')).json();
});
afterAll(async () => {
  await open?.close();
  await locked?.close();
});

/** `METHOD /path` of every operation in the document. */
function documented(d: Doc): Set<string> {
  const out = new Set<string>();
  for (const [path, item] of Object.entries(d.paths as Record<string, Record<string, unknown>>)) {
    for (const m of Object.keys(item)) if (METHODS.includes(m)) out.add(key(m, path));
  }
  return out;
}

/**
 * `METHOD /path` of every route the Express app serves: route layers of the app's router, of
 * every router mounted in it, and the routes of the API's dispatcher (the app is the server's
 * request listener).
 */
function served(t: TestService): Set<string> {
  // The request listener is the app's handler (app.ts, `serve`), not an Express router: every
  // route is served by the API's dispatcher (one radix tree), so its list is all there is.
  const listener = t.service.server.listeners('request')[0] as Partial<Express>;
  expect(listener.router, 'routes registered on Express itself would be served outside the document').toBeUndefined();
  const out = new Set<string>();
  for (const r of t.service.api.served) if (r.method !== 'HEAD') out.add(key(r.method.toLowerCase(), toDocPath(r.path)));
  return out;
}

const declared = (t: TestService) => new Set(t.service.api.routes.map((r) => key(r.method, toDocPath(r.path))));
const op = (d: Doc, r: RouteSpec) => d.paths[toDocPath(r.path)]?.[r.method];
const shapeKeys = (schema: z.ZodType | undefined): string[] => Object.keys((schema as unknown as { shape?: object })?.shape ?? {});

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1, with and without the token', async () => {
    for (const d of [doc, lockedDoc]) {
      const validator = new Validator();
      const result = await validator.validate(d);
      expect(result.errors ?? []).toEqual([]);
      expect(result.valid).toBe(true);
      expect(validator.version).toBe('3.1');
      expect(d.openapi).toMatch(/^3\.1\./);
    }
  });

  it('documents every route the app serves, and nothing it does not serve', () => {
    const routes = served(open);
    expect(routes.size).toBeGreaterThan(10);
    expect([...routes].filter((r) => !documented(doc).has(r)).sort()).toEqual([]);
    expect([...documented(doc)].filter((r) => !routes.has(r)).sort()).toEqual([]);
    // The Api's own list is the same set.
    expect([...declared(open)].sort()).toEqual([...documented(doc)].sort());
    // Including the document itself and the metrics.
    expect(documented(doc)).toContain('GET /api/openapi.json');
    expect(documented(doc)).toContain('GET /api/metrics');
  });

  it('gives every route its operation id, path parameters, query parameters and body', () => {
    const ids = new Set<string>();
    for (const r of open.service.api.routes) {
      const o = op(doc, r);
      const where = key(r.method, r.path);
      expect(o, where).toBeDefined();
      expect(ids.has(o.operationId), `${where}: duplicate operationId ${o.operationId}`).toBe(false);
      ids.add(o.operationId);
      const params = (o.parameters ?? []) as { in: string; name: string; required?: boolean; schema?: unknown }[];
      const pathParams = [...r.path.matchAll(/[:*]([A-Za-z_$][\w$]*)/g)].map((m) => m[1]);
      expect(
        params
          .filter((p) => p.in === 'path')
          .map((p) => p.name)
          .sort(),
        where,
      ).toEqual([...pathParams].sort());
      for (const p of params.filter((x) => x.in === 'path')) expect(p.required, `${where} ${p.name}`).toBe(true);
      if (r.query) {
        const names = params.filter((p) => p.in === 'query').map((p) => p.name);
        expect(names.sort(), where).toEqual(shapeKeys(r.query).sort());
        for (const p of params) expect(p.schema, `${where} ${p.name}`).toBeDefined();
      }
      if (r.body) {
        expect(o.requestBody?.content?.['application/json']?.schema, `${where} body`).toBeDefined();
        expect(o.requestBody.required, where).toBe(!r.bodyOptional);
      } else {
        expect(o.requestBody, where).toBeUndefined();
      }
    }
  });

  it('documents every declared answer, with its media type, and the framework’s own', () => {
    for (const r of open.service.api.routes) {
      const o = op(doc, r);
      const where = key(r.method, r.path);
      for (const [status, a] of Object.entries(r.answers)) {
        const res = o.responses[status];
        // A route's own 422 also names the body parser's rejections, which come first.
        if (status === '422') expect(res?.description, `${where} ${status}`).toContain(a.description);
        else expect(res?.description, `${where} ${status}`).toBe(a.description);
        if (a.schema || a.contentType) expect(res.content?.[a.contentType ?? 'application/json']?.schema, `${where} ${status}`).toBeDefined();
        for (const h of Object.keys(a.headers ?? {})) expect(res.headers?.[h], `${where} ${status} ${h}`).toBeDefined();
      }
      if (r.body || r.query) expect(o.responses['422'], `${where} 422`).toBeDefined();
      // Every 422 takes the body parser's ErrorBody (`validation_failed`), whatever the route's own.
      expect(JSON.stringify(o.responses['422'].content['application/json'].schema), `${where} 422`).toContain('#/components/schemas/ErrorBody');
      if (r.method === 'get') {
        // Every GET but the event stream, which never answers 304.
        if (r.answers[200]?.contentType === 'text/event-stream') expect(o.responses['304'], `${where} 304`).toBeUndefined();
        else expect(o.responses['304'], `${where} 304 (If-None-Match: *)`).toBeDefined();
      }
      if (r.method !== 'get') {
        expect(o.responses['507'], `${where} 507`).toBeDefined();
        expect(o.responses['503'], `${where} 503`).toBeDefined();
      }
      if (r.body) {
        expect(o.responses['413'], `${where} 413`).toBeDefined();
      }
      // The Host check runs before every route.
      expect(o.responses['421']?.description, `${where} 421`).toMatch(/CONSOLE_ALLOWED_HOSTS/);
      expect(o.responses['421']?.content?.['application/json']?.schema, `${where} 421`).toBeDefined();
      expect(
        Object.keys(o.responses).some((s) => /^2\d\d$/.test(s)),
        `${where}: a success answer`,
      ).toBe(true);
    }
  });

  it('documents the streamed answers as text/event-stream and the metrics as Prometheus text', () => {
    expect(doc.paths['/api/events/stream'].get.responses['200'].content).toHaveProperty(['text/event-stream']);
    expect(Object.keys(doc.paths['/api/metrics'].get.responses['200'].content)).toEqual(['text/plain; version=0.0.4']);
  });

  it('documents integer query parameters as integers with their bounds and default', () => {
    const limit = doc.paths['/api/events'].get.parameters.find((p: { name: string }) => p.name === 'limit');
    expect(limit.schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 500, default: 200 });
    expect(limit.schema).not.toHaveProperty('pattern');
    expect(limit.required ?? false).toBe(false);
  });

  it('declares the bearer scheme; with the token set, requires it everywhere but the open routes', () => {
    for (const d of [doc, lockedDoc]) {
      expect(d.components.securitySchemes.bearerAuth).toMatchObject({ type: 'http', scheme: 'bearer' });
      expect(d.components.securitySchemes.queryToken).toMatchObject({ type: 'apiKey', in: 'query', name: 'token' });
    }
    // Open instance: "bearer, or nothing" (`{}`), no 401; saying nothing would be linted as an
    // operation without security.
    expect(doc.security).toEqual([{ bearerAuth: [] }, {}]);
    expect(doc.paths['/api/metrics'].get.security).toEqual([{ bearerAuth: [] }, {}]);
    expect(doc.paths['/api/health'].get.security).toEqual([]);
    expect(doc.paths['/api/events/stream'].get.security).toEqual([{ bearerAuth: [] }, { queryToken: [] }, {}]);
    expect(doc.paths['/api/metrics'].get.responses['401']).toBeUndefined();

    expect(lockedDoc.security).toEqual([{ bearerAuth: [] }]);
    const openRoutes = ['/api/health', '/api/ready', '/api/config', '/api/openapi.json', '/api/docs'];
    for (const r of locked.service.api.routes) {
      const o = op(lockedDoc, r);
      const where = key(r.method, r.path);
      if (r.method === 'get' && openRoutes.includes(r.path)) {
        expect(o.security, where).toEqual([]);
        expect(o.responses['401'], where).toBeUndefined();
      } else {
        expect(o.security, where).toContainEqual({ bearerAuth: [] });
        expect(o.responses['401'], where).toBeDefined();
        expect(o.responses['401'].headers['WWW-Authenticate'], where).toBeDefined();
      }
    }
    expect(lockedDoc.paths['/api/events/stream'].get.security).toEqual([{ bearerAuth: [] }, { queryToken: [] }]);
  });

  it('passes Redocly’s linter (recommended rules) with no error, with and without the token', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
    try {
      for (const [name, d] of [
        ['open', doc],
        ['locked', lockedDoc],
      ] as const) {
        const file = path.join(dir, `${name}.json`);
        fs.writeFileSync(file, JSON.stringify(d));
        // Offline: no telemetry, no update check.
        const run = spawnSync(process.execPath, [path.join(REPO_ROOT, 'node_modules', '@redocly', 'cli', 'bin', 'cli.js'), 'lint', file, '--format=json'], {
          encoding: 'utf8',
          env: { PATH: process.env.PATH ?? '', REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', HOME: dir },
          timeout: 120_000,
        });
        if (run.error) throw run.error;
        const report = JSON.parse(run.stdout) as { totals: { errors: number }; problems: { severity: string; ruleId: string; message: string }[] };
        const errors = report.problems.filter((p) => p.severity === 'error').map((p) => `${p.ruleId}: ${p.message}`);
        expect({ name, errors }).toEqual({ name, errors: [] });
        expect(report.totals.errors).toBe(0);
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('lists every error code with its one status, and requires the code in every error body', () => {
    const codes = doc.components.schemas.ErrorCode;
    expect(codes.enum).toEqual([...ANSWERED_CODES]);
    for (const c of ANSWERED_CODES) {
      expect(codes['x-status-of-code'][c], c).toBe(ERROR_CATALOGUE[c].status);
      expect(codes.description, c).toContain(`| \`${c}\` | ${ERROR_CATALOGUE[c].status} |`);
    }
    expect(doc.components.schemas.ErrorBody.required).toEqual(['detail', 'code']);
    // The 422 items of the slash route carry `ctx` (the allowed commands): the schema says so.
    expect(doc.components.schemas.ValidationIssue.properties).toHaveProperty('ctx');
  });

  it('documents the answers no operation gives: unknown paths (404), other methods (405 with Allow), and the rest by code', () => {
    const responses = doc.components.responses;
    for (const c of ANSWERED_CODES.filter((x) => ERROR_CATALOGUE[x].unrouted)) {
      expect(responses[c], c).toMatchObject({ 'x-status': ERROR_CATALOGUE[c].status, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } });
    }
    expect(Object.keys(responses)).toEqual(
      expect.arrayContaining(['route_not_found', 'method_not_allowed', 'host_not_allowed', 'unauthorized', 'shutting_down', 'malformed_request', 'headers_too_large']),
    );
    expect(responses.method_not_allowed.headers.Allow.required).toBe(true);
    expect(doc.info.description).toMatch(/404 `route_not_found`/);
    expect(doc.info.description).toMatch(/405 `method_not_allowed` whose `Allow` lists its methods/);
  });

  it('says on each path item which methods it has; the service answers any other with 405 and that Allow', async () => {
    for (const [p, item] of Object.entries(doc.paths as Record<string, { description: string }>)) {
      const allow = /`Allow: ([A-Z, ]+)`/.exec(item.description)?.[1];
      expect(allow, p).toBeDefined();
      const target = p.replace(/\{[^}]+\}/g, 'x1');
      // A fresh connection per request (agent: false): a kept-alive socket the server closed
      // while the earlier tests of this file ran would be reset under a slow machine.
      const res = await rawRequest(open.url, target, { method: 'PATCH' });
      const body = res.json() as { code: string; detail: string };
      expect({ p, status: res.status, allow: res.headers.allow, code: body.code }).toEqual({ p, status: 405, allow, code: 'method_not_allowed' });
    }
    const unknown = await rawRequest(open.url, '/api/no-such-thing', { method: 'PATCH' });
    expect(unknown.status).toBe(404);
    expect(unknown.json()).toEqual({ detail: 'no route for PATCH /api/no-such-thing', code: 'route_not_found' });
  });
});
