/**
 * The ops page: files of `src/ops-page/` served as they are at `GET /` and `/ops/<file>`, plus
 * swagger-ui-dist and uPlot under `/ops/vendor/`. The page holds no data and asks for the token
 * itself, so it runs before the token check and answers only GET/HEAD of its own files.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { PAGE_CSP, securityHeaders, StaticAssets } from './static-assets.js';

/** Where the page's files are served. */
export const OPS_PREFIX = '/ops/';

/** The route template of every page file, for request logs and metric labels. */
export const OPS_ROUTE = '/ops/:file';

/** The files of swagger-ui-dist that `/api/docs` loads, served under `/ops/vendor/`. */
const VENDOR_FILES = ['swagger-ui-bundle.js', 'swagger-ui.css'] as const;

/** The files of uPlot (the `uplot` package's `dist/`) that the status view's charts load, under `/ops/vendor/`. */
const CHART_FILES = ['uPlot.esm.js', 'uPlot.min.css'] as const;

/** The page's own file names: lower-case words, one extension. */
const PAGE_FILE = /^[a-z0-9][a-z0-9-]*\.(?:html|js|css|svg|png)$/;

/** The static files of the page (in `dir`, Config.opsPageDir) and the docs viewer. */
export function opsAssets(dir: string): StaticAssets {
  const files: [string, string][] = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (PAGE_FILE.test(name) && fs.statSync(path.join(dir, name)).isFile()) files.push([`${OPS_PREFIX}${name}`, path.join(dir, name)]);
  }
  files.push(['/', path.join(dir, 'index.html')]);
  const swagger = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  for (const name of VENDOR_FILES) files.push([`${OPS_PREFIX}vendor/${name}`, path.join(swagger, name)]);
  const uplot = path.join(path.dirname(createRequire(import.meta.url).resolve('uplot/package.json')), 'dist');
  for (const name of CHART_FILES) files.push([`${OPS_PREFIX}vendor/${name}`, path.join(uplot, name)]);
  return new StaticAssets(files);
}

/**
 * The middleware serving the page's files (GET and HEAD only); register it after the Host
 * check, CORS and the shutdown gate, before the token check.
 */
export function opsPage(assets: StaticAssets): RequestHandler {
  const headers = securityHeaders(PAGE_CSP);
  return (req, res, next) => {
    // The URL's start first: `req.path` parses the URL, and the API's requests never are pages.
    if ((req.method !== 'GET' && req.method !== 'HEAD') || req.url.startsWith('/api/') || !assets.has(req.path)) {
      next();
      return;
    }
    // The template the request log and the metrics label it with (route-template.ts).
    (req as { route?: unknown }).route = { path: req.path === '/' ? '/' : OPS_ROUTE };
    assets.send(req, res, req.path, headers).catch(next);
  };
}
