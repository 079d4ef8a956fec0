/**
 * `GET /api/openapi.json`: the OpenAPI 3.1 document of every declared route, generated from
 * the zod schemas that validate the requests (issue 4, item 7). Open without a token.
 */
import { z } from 'zod';
import { APP_VERSION } from '../../main/config.js';
import { isOpenRoute, TOKEN_QUERY_ROUTE } from '../auth.js';
import type { Api } from '../route.js';
import { IDENTIFIER_RULE } from '../schemas.js';
import type { AppDeps } from './deps.js';

export function openapiRoutes(api: Api, { config }: AppDeps): void {
  let document: object | undefined;
  api.route({
    method: 'get',
    path: '/api/openapi.json',
    operationId: 'openapi',
    summary: 'OpenAPI document',
    description: 'This document: every route, its path and query parameters, body and answers. Served without a token.',
    tag: 'Service',
    answers: {
      200: { description: 'OpenAPI 3.1 document.', schema: z.looseObject({ openapi: z.string(), info: z.looseObject({}), paths: z.looseObject({}) }) },
    },
    handler: ({ res }) => {
      // Rendered on first use, once every router module has declared its routes.
      document ??= api.document(
        {
          title: 'console-backend',
          version: APP_VERSION,
          description: [
            'HTTP/JSON backend of the episodic-video production console.',
            // How a request finds its operation (route.ts) and who answers it (write-proxy.ts, host-check.ts).
            'Paths are matched case-insensitively, with an optional trailing slash, percent-decoded (`%61` is `a`; `%2F` stays a character of a segment); a doubled slash or a `.`/`..` segment matches no operation (404). Every spelling of an operation is that operation for every check.',
            'With SERVICE_WRITE_UPSTREAM set on this instance, the POST, PUT and DELETE operations other than `publishInternalEvent` are forwarded to the upstream in their canonical spelling (with `Forwarded`, `X-Forwarded-For` and `Via`) and answered with its answer; everything else is answered here.',
            'Every operation may answer 421 when the Host header names a host this instance does not serve (CONSOLE_ALLOWED_HOSTS).',
            IDENTIFIER_RULE,
          ].join('\n\n'),
        },
        { bearer: { required: config.apiToken !== null, isOpen: isOpenRoute, queryTokenPath: TOKEN_QUERY_ROUTE } },
      );
      res.json(document);
    },
  });
}
