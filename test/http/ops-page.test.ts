/**
 * How the service serves the ops page and the API docs over HTTP:
 * every file the pages load, security headers, validators and compression; open without the
 * token while everything else keeps needing it; unknown paths and other methods keep their
 * 401/404/405.
 */
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawExchange, rawRequest } from '../helpers/raw.js';
import { REPO_ROOT, startTestService, type TestService } from '../helpers/service.js';

const PAGE_DIR = path.join(REPO_ROOT, 'src', 'ops-page');
const TOKEN = 'ops-http-token-1';

let open: TestService;
let locked: TestService;
beforeAll(async () => {
  [open, locked] = await Promise.all([startTestService({ store: 'empty' }), startTestService({ store: 'empty', env: { CONSOLE_API_TOKEN: TOKEN } })]);
});
afterAll(async () => {
  await Promise.all([open?.close(), locked?.close()]);
});

/** A GET whose body is kept as bytes, as sent (fetch would decompress it). */
function getBytes(base: string, url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${url}`, { headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

/** Local URLs a page loads: `src` and `href` attributes, and ES module imports. */
function references(text: string): string[] {
  const attrs = [...text.matchAll(/\b(?:src|href)="(\/[^"]*)"/g)].map((m) => m[1] as string);
  const imports = [...text.matchAll(/^import [^;]*? from '\.\/([a-z-]+\.js)';$/gm)].map((m) => `/ops/${m[1]}`);
  return [...attrs, ...imports];
}

describe('the ops page and the docs viewer over HTTP', () => {
  it('serves every file the pages load, each with its type and the security headers', async () => {
    const seen = new Set<string>();
    const queue = ['/', '/api/docs'];
    while (queue.length > 0) {
      const url = queue.shift() as string;
      if (seen.has(url) || url.startsWith('/api/openapi.json')) continue;
      seen.add(url);
      const res = await open.get(url);
      expect(res.status, url).toBe(200);
      const type = res.headers.get('content-type') ?? '';
      expect(type, url).toMatch(/^(text\/html|text\/javascript|text\/css|image\/svg\+xml)/);
      const csp = res.headers.get('content-security-policy') ?? '';
      expect(csp, url).toMatch(/(^|; )script-src 'self'(;|$)/);
      expect(csp, url).toContain("default-src 'none'");
      expect(csp, url).toContain("frame-ancestors 'none'");
      expect(csp, url).not.toContain('unsafe');
      expect(res.headers.get('x-content-type-options'), url).toBe('nosniff');
      const body = await res.text();
      if (/html|javascript/.test(type) && !url.startsWith('/ops/vendor/')) queue.push(...references(body));
    }
    // The pages, every module of the page, and the viewer's files from swagger-ui-dist.
    const modules = fs.readdirSync(PAGE_DIR).filter((f) => f.endsWith('.js') && f !== 'docs.js');
    expect([...seen]).toEqual(
      expect.arrayContaining(['/', '/api/docs', '/ops/ops.css', '/ops/docs.js', '/ops/vendor/swagger-ui-bundle.js', '/ops/vendor/swagger-ui.css', ...modules.map((f) => `/ops/${f}`)]),
    );
    // No inline script in either page: the policy would refuse it.
    for (const page of ['index.html', 'docs.html']) expect(fs.readFileSync(path.join(PAGE_DIR, page), 'utf8')).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
  });

  it('answers 304 to its ETag, gzip when accepted, headers only to HEAD', async () => {
    const first = await open.get('/ops/app.js');
    const etag = first.headers.get('etag') as string;
    expect(etag).toMatch(/^"[\w-]+"$/);
    const body = await first.text();
    const again = await open.get('/ops/app.js', { headers: { 'if-none-match': etag } });
    expect(again.status).toBe(304);
    expect(await again.text()).toBe('');

    const bundle = await getBytes(open.url, '/ops/vendor/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' });
    expect(bundle.status).toBe(200);
    expect(bundle.headers['content-encoding']).toBe('gzip');
    expect(bundle.headers.vary).toMatch(/Accept-Encoding/);
    const swagger = fs.readFileSync(path.join(REPO_ROOT, 'node_modules', 'swagger-ui-dist', 'swagger-ui-bundle.js'));
    expect(gunzipSync(bundle.body).equals(swagger)).toBe(true);

    const head = await open.get('/', { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await head.text()).toBe('');
    expect(body).toContain('openStream');
  });

  it('is open with CONSOLE_API_TOKEN set, while the API, unknown paths and other methods still need the token', async () => {
    for (const url of ['/', '/ops/app.js', '/ops/ops.css', '/ops/vendor/swagger-ui.css', '/api/docs']) {
      const res = await locked.get(url);
      expect({ url, status: res.status }).toEqual({ url, status: 200 });
      await res.body?.cancel();
    }
    for (const [method, url] of [
      ['GET', '/api/jobs'],
      ['GET', '/ops/nope.js'],
      ['GET', '/nope'],
      ['POST', '/'],
      ['GET', '/ops/'],
      ['GET', '/src/ops-page/app.js'],
    ]) {
      const res = await locked.get(url as string, { method });
      expect({ method, url, status: res.status }).toEqual({ method, url, status: 401 });
      await res.body?.cancel();
    }
    const withToken = await locked.get('/api/jobs', { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(withToken.status).toBe(200);
  });

  it('is behind the Host check like every route (DNS rebinding): 421 for a Host not served', async () => {
    for (const url of ['/', '/ops/app.js', '/api/docs']) {
      const res = await rawExchange(open.url, `GET ${url} HTTP/1.1\r\nHost: evil.example`);
      expect({ url, status: res.status }).toEqual({ url, status: 421 });
    }
  });

  it('leaves the 404 and 405 of other paths as they were', async () => {
    for (const url of ['/ops/nope.js', '/nope', '/ops/', '/OPS/APP.JS', '/api/nope', '/ops/../package.json', '/ops/vendor/index.html']) {
      const res = await rawRequest(open.url, url);
      expect({ url, status: res.status }).toEqual({ url, status: 404 });
      expect(res.json().code, url).toBe('route_not_found');
    }
    const post = await open.post('/', {});
    expect(post.status).toBe(404);
    const patch = await open.get('/api/docs', { method: 'PATCH' });
    expect(patch.status).toBe(405);
    expect(patch.headers.get('allow')).toBe('GET, HEAD, OPTIONS');
  });
});
