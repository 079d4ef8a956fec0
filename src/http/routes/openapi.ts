/** `GET /api/openapi.json`: the OpenAPI 3.1 document generated from the zod schemas that validate requests; open without a token. */
import { z } from 'zod';
import { APP_VERSION, type Config } from '../../config/config.js';
import { isOpenRoute, TOKEN_QUERY_ROUTE } from '../auth.js';
import type { Api, DocumentOptions } from '../route.js';
import { IDENTIFIER_RULE } from '../schemas.js';
import type { AppDeps } from './deps.js';

/** The service's document: its key (equal keys, equal documents) and the document, rendered once on first use. */
export interface ServiceDocument {
  readonly key: () => string;
  readonly render: () => object;
}

/**
 * The document this service serves. Render it once every router module declared its routes.
 * @param config whether CONSOLE_API_TOKEN is set decides the security requirements.
 */
export function serviceDocument(api: Api, config: Pick<Config, 'apiToken'>): ServiceDocument {
  const info = {
    title: 'console-backend',
    version: APP_VERSION,
    description: [
      'HTTP/JSON backend of the episodic-video production console.',
      // How a request finds its operation (route.ts) and who answers it (write-proxy.ts, host-check.ts).
      'Paths are matched case-insensitively, with an optional trailing slash, percent-decoded (`%61` is `a`; `%2F` stays a character of a segment); a doubled slash or a `.`/`..` segment matches no operation (404). Every spelling of an operation is that operation for every check.',
      'With SERVICE_WRITE_UPSTREAM set on this instance, the POST, PUT and DELETE operations other than `publishInternalEvent` are forwarded to the upstream in their canonical spelling (with `Forwarded`, `X-Forwarded-For` and `Via`) and answered with its answer; everything else is answered here.',
      'Every operation may answer 421 when the Host header names a host this instance does not serve (CONSOLE_ALLOWED_HOSTS). Every POST, PUT and DELETE answers 403 `cross_site_request` when its `Origin` header is present and is neither this service’s own origin (the request’s Host) nor an allowed CORS origin.',
      IDENTIFIER_RULE,
      // The error catalogue (errors.ts) and the answers no operation gives (app.ts, client-error.ts, shutdown-gate.ts).
      'Every error answer is `{ "detail": …, "code": "…" }` (`ErrorBody`): `detail` is a string, the validation list or the MissingCanonicalField object, and `code` (`ErrorCode`) says which error it is; each code has one status. Some answers come before any operation is chosen; they are under `components.responses`, named by their code: a path no operation has, whatever the method, is a 404 `route_not_found`; a path that has operations, with another method, a 405 `method_not_allowed` whose `Allow` lists its methods (each path item says them); a Host not served a 421, a missing or wrong token a 401 (before any 404), the shutdown a 503, a body that cannot be read a 413 or 422, and a request Node’s HTTP parser refuses a 400, 408 or 431 (the connection is then closed). CORS preflights (OPTIONS) answer 204 without a body on every path.',
    ].join('\n\n'),
  };
  const options: DocumentOptions = { bearer: { required: config.apiToken !== null, isOpen: isOpenRoute, queryTokenPath: TOKEN_QUERY_ROUTE } };
  let document: object | undefined;
  let key: string | undefined;
  return {
    key: () => (key ??= api.documentKey(info, options)),
    render: () => (document ??= api.document(info, options)),
  };
}

/** Declares `GET /api/openapi.json`. @returns the document it serves (for the answer recorder). */
export function openapiRoutes(api: Api, { config }: AppDeps): ServiceDocument {
  const doc = serviceDocument(api, config);
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
      res.json(doc.render());
    },
  });
  return doc;
}
