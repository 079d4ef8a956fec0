/** `GET /api/docs`: the OpenAPI document rendered by Swagger UI from swagger-ui-dist, served locally; open like the document. */
import { z } from 'zod';
import { PAGE_CSP, securityHeaders, type StaticAssets } from '../static-assets.js';
import { OPS_PREFIX } from '../ops-page.js';
import type { Api } from '../route.js';

/** The path of the viewer. */
export const DOCS_ROUTE = '/api/docs';

export function docsRoutes(api: Api, assets: StaticAssets): void {
  const headers = securityHeaders(PAGE_CSP);
  api.route({
    method: 'get',
    path: DOCS_ROUTE,
    operationId: 'apiDocs',
    summary: 'The API documentation (HTML)',
    description:
      'This document rendered by Swagger UI, served by the service itself (no network), with a strict Content-Security-Policy. "Try it out" sends the ops page’s token when it has one (or use Authorize). Served without a token. `If-None-Match` with the ETag answers 304.',
    tag: 'Service',
    answers: {
      200: { description: 'An HTML page.', contentType: 'text/html', schema: z.string(), headers: { ETag: 'Of the page’s content.', 'Content-Security-Policy': 'This origin only.' } },
      304: { description: 'Not modified.' },
    },
    handler: async ({ req, res }) => {
      await assets.send(req, res, `${OPS_PREFIX}docs.html`, headers);
    },
  });
}
