// The OpenAPI 3.1 document of the declared routes (route-spec.ts), through zod-openapi: each route's own answers
// and the framework's that any operation may give (every request body is parsed as JSON first). Answers given
// before an operation is chosen are `components.responses`, named by their code.
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { createDocument, type ZodOpenApiOperationObject, type ZodOpenApiPathsObject } from 'zod-openapi';
import { ANSWERED_CODES, ERROR_CATALOGUE } from './errors.js';
import { SERVED_METHODS, type AnswerSpec, type RouteSpec } from './route-spec.js';
import { ErrorBody } from './schemas.js';

/** The document's `info`. */
export interface DocumentInfo {
  readonly title: string;
  readonly version: string;
  readonly description: string;
}

/** Options of {@link renderDocument}. */
export interface DocumentOptions {
  /** The bearer scheme (api-decisions.md, "Network and safety defaults"), always declared; `required` when
   * CONSOLE_API_TOKEN is set; `queryTokenPath` (the event stream) also takes `?token=`. */
  readonly bearer?: {
    readonly required: boolean;
    readonly isOpen: (method: string, path: string) => boolean;
    readonly queryTokenPath?: string;
  };
}

/** The 422s of the JSON body parser (app.ts), given before a route's own validation. */
const BODY_REJECTIONS =
  'a body that is not JSON (`json_invalid`, `content_type`, `body_encoding`), nested too deep (`json_too_deep`), or holding a member named `__proto__` at any depth (`forbidden_member`, `loc` its path: such a body is refused and nothing is stored; `constructor`, `prototype` and every other name are ordinary members)';

/** The same, for operations that take no body. */
const BODY_REJECTIONS_SHORT = 'is not JSON, is nested too deep, or holds a member named `__proto__`';

/** Answers given before any operation is chosen (`components.responses`): the catalogue's `unrouted` codes (errors.ts). */
function unroutedResponses(): Record<string, object> {
  const out: Record<string, object> = {};
  for (const code of ANSWERED_CODES) {
    const entry = ERROR_CATALOGUE[code];
    if (entry.unrouted !== true) continue;
    const headers =
      code === 'method_not_allowed'
        ? { Allow: { required: true, description: 'The methods the path has, OPTIONS included.', schema: { type: 'string' } } }
        : code === 'unauthorized' || code === 'invalid_token'
          ? { 'WWW-Authenticate': { required: true, description: '`Bearer realm="console-backend"` (with `error="invalid_token"` for a wrong token).', schema: { type: 'string' } } }
          : undefined;
    out[code] = {
      description: `${entry.status}: ${entry.means}`,
      'x-status': entry.status,
      ...(headers ? { headers } : {}),
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    };
  }
  return out;
}

/** Names of the security schemes in the document. */
export const BEARER_SCHEME = 'bearerAuth';
export const QUERY_TOKEN_SCHEME = 'queryToken';

/** A route's own answers and the framework's that every operation (or write) may give; `tokenRequired` adds the 401. */
function answersOf(s: RouteSpec, tokenRequired: boolean): Record<number, AnswerSpec> {
  const answers: Record<number, AnswerSpec> = { ...s.answers };
  // A route's own 422 does not replace the body parser's, which runs first.
  const own422 = answers[422];
  if (own422?.schema !== undefined && own422.schema !== ErrorBody && !(own422.schema instanceof z.ZodUnion && own422.schema.options.includes(ErrorBody))) {
    answers[422] = {
      ...own422,
      description: `${own422.description} Also a request body${s.body ? '' : ' (this operation takes none: any body is read first)'} that ${BODY_REJECTIONS_SHORT} (\`validation_failed\`).`,
      schema: z.union([own422.schema, ErrorBody]),
    };
  }
  answers[422] ??= {
    description: s.body
      ? `Validation failure (\`validation_failed\`): \`detail\` lists \`{ loc, msg, type }\`; also ${BODY_REJECTIONS}.`
      : s.query
        ? `Validation failure (\`validation_failed\`): \`detail\` lists \`{ loc, msg, type }\`; also a request body (this operation takes none: any body is read first) that ${BODY_REJECTIONS_SHORT}.`
        : `A request body (this operation takes none: any body is read first) that ${BODY_REJECTIONS_SHORT} (\`validation_failed\`).`,
    schema: ErrorBody,
  };
  // Express answers `If-None-Match: *` with 304 on every GET (RFC 9110 13.1.2); the event stream never does.
  if (s.method === 'get' && s.answers[200]?.contentType !== 'text/event-stream')
    answers[304] ??= { description: 'Not modified: `If-None-Match: *` (any current representation, RFC 9110 13.1.2) or an ETag of the answer. No body.' };
  answers[400] ??= { description: 'The request body was cut short (the client went away while sending it) or its size could not be read (`bad_request`).', schema: ErrorBody };
  answers[413] ??= {
    description: s.body
      ? 'The body is larger than CONSOLE_MAX_BODY_BYTES (`body_too_large`).'
      : 'A request body (this operation takes none: any body is read first) larger than CONSOLE_MAX_BODY_BYTES (`body_too_large`).',
    schema: ErrorBody,
  };
  if (s.method !== 'get') {
    answers[507] ??= { description: 'The state database has no space left on its disk (`state_db_full`): nothing was stored.', schema: ErrorBody };
    answers[503] ??= {
      description:
        'The state database is busy (`state_db_busy`, with Retry-After), read-only or failing (`state_db_unavailable`), or in cluster mode cannot be reached (`state_db_unreachable`, with Retry-After): nothing was stored; or the service is shutting down (`shutting_down`).',
      schema: ErrorBody,
    };
  }
  // Every operation: the shutdown gate (shutdown-gate.ts).
  answers[503] ??= {
    description:
      'The service is shutting down (`shutting_down`); the connection is closed. In cluster mode, a read of console state, jobs or events while the PostgreSQL database cannot be reached (`state_db_unreachable`, with Retry-After).',
    schema: ErrorBody,
  };
  if (s.method !== 'get') {
    answers[403] ??= {
      description: 'A request from a browser page of another site (`cross_site_request`): its `Origin` is neither this service’s own nor an allowed CORS origin. Nothing was done.',
      schema: ErrorBody,
    };
  }
  if (s.method !== 'get' && s.localOnly !== true) {
    answers[502] ??= { description: 'Only with SERVICE_WRITE_UPSTREAM set: the upstream could not be reached, or cut the connection before answering (`upstream_unreachable`).', schema: ErrorBody };
    answers[508] ??= { description: 'Only with SERVICE_WRITE_UPSTREAM set: the upstream forwards back to this service (`proxy_loop`).', schema: ErrorBody };
  }
  answers[421] ??= {
    description:
      'The Host header (or an absolute request target) names a host this instance does not serve (DNS rebinding defence, `host_not_allowed`): bound to a loopback address it serves loopback names (localhost, 127.0.0.1, [::1], any port) and the hosts of CONSOLE_ALLOWED_HOSTS only; bound elsewhere, the same once CONSOLE_ALLOWED_HOSTS is set. Nothing was done.',
    schema: ErrorBody,
  };
  answers[500] ??= {
    description:
      'An error the service did not expect (`internal`: a bug, a module that cannot be loaded): the detail is generic and names nothing internal; `requestId` (also `X-Request-Id`) finds the error, with its stack, in the log.',
    schema: ErrorBody,
    headers: { 'X-Request-Id': 'The request’s id (sent on every answer): the `reqId` of its log lines.' },
  };
  if (tokenRequired && !answers[401]) {
    answers[401] = {
      description: 'Missing (`unauthorized`) or wrong (`invalid_token`) bearer token.',
      schema: ErrorBody,
      headers: { 'WWW-Authenticate': '`Bearer realm="console-backend"` (with `error="invalid_token"` for a wrong token).' },
    };
  }
  return answers;
}

/** Renders the document of `specs` (see the module's comment). */
export function renderDocument(specs: readonly RouteSpec[], info: DocumentInfo, options: DocumentOptions = {}): object {
  const paths: ZodOpenApiPathsObject = {};
  const bearer = options.bearer;
  const methodsOf = new Map<string, Set<string>>();
  for (const s of specs) {
    const path = s.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const protectedOp = bearer !== undefined && !bearer.isOpen(s.method, s.path);
    const answers = answersOf(s, protectedOp && bearer.required);
    const schemes: Record<string, string[]>[] = s.path === bearer?.queryTokenPath ? [{ [BEARER_SCHEME]: [] }, { [QUERY_TOKEN_SCHEME]: [] }] : [{ [BEARER_SCHEME]: [] }];
    const op: ZodOpenApiOperationObject = {
      operationId: s.operationId,
      summary: s.summary,
      ...(s.description ? { description: s.description } : {}),
      tags: [s.tag],
      // Always stated; without a token set, protected operations accept one or nothing (`{}`).
      ...(bearer ? { security: !protectedOp ? [] : bearer.required ? schemes : [...schemes, {}] } : {}),
      requestParams: {
        ...(s.params ? { path: s.params as never } : {}),
        ...(s.query ? { query: s.query as never } : {}),
      },
      ...(s.body
        ? {
            requestBody: {
              description: `JSON (\`Content-Type: application/json\`); member names in camelCase or snake_case. Answered 422 before the route's own checks: ${BODY_REJECTIONS}.`,
              required: !s.bodyOptional,
              content: { 'application/json': { schema: s.body } },
            },
          }
        : {}),
      responses: Object.fromEntries(
        Object.entries(answers).map(([status, a]) => [
          status,
          {
            description: a.description,
            ...(a.headers || a.optionalHeaders
              ? {
                  // A 503's Retry-After is optional: the shutdown sends none.
                  headers: z.object(
                    Object.fromEntries([
                      ...Object.entries(a.headers ?? {}).map(([h, d]) => [
                        h,
                        status === '503' && h === 'Retry-After' ? z.string().optional().meta({ description: d }) : z.string().meta({ description: d }),
                      ]),
                      ...Object.entries(a.optionalHeaders ?? {}).map(([h, d]) => [h, z.string().optional().meta({ description: d })]),
                    ]),
                  ),
                }
              : {}),
            ...(a.schema || a.contentType ? { content: { [a.contentType ?? 'application/json']: { schema: a.schema ?? z.string() } } } : {}),
          },
        ]),
      ),
    };
    paths[path] = { ...(paths[path] ?? {}), [s.method]: op };
    const methods = methodsOf.get(path) ?? new Set<string>();
    methods.add(s.method.toUpperCase());
    if (s.method === 'get') methods.add('HEAD');
    methodsOf.set(path, methods);
  }
  const doc = createDocument({
    openapi: '3.1.0',
    info: { ...info },
    servers: [{ url: '/', description: 'this service' }],
    paths,
    ...(bearer
      ? {
          components: {
            securitySchemes: {
              [BEARER_SCHEME]: {
                type: 'http',
                scheme: 'bearer',
                description: `CONSOLE_API_TOKEN. ${bearer.required ? 'Set on this instance: required' : 'Not set on this instance: the API is open (a token is accepted and not checked)'}; never required by the open routes (health, readiness, config, this document).`,
              },
              [QUERY_TOKEN_SCHEME]: {
                type: 'apiKey',
                in: 'query',
                name: 'token',
                description: 'The same token as a query parameter, accepted by the event stream only (EventSource cannot set headers).',
              },
            },
          },
          security: bearer.required ? [{ [BEARER_SCHEME]: [] }] : [{ [BEARER_SCHEME]: [] }, {}],
        }
      : {}),
  }) as unknown as { paths: Record<string, Record<string, unknown>>; components?: Record<string, unknown> };
  // Said on the path item, which has no place for responses of methods it lacks.
  for (const [path, methods] of methodsOf) {
    const item = doc.paths[path];
    const allow = [...SERVED_METHODS.filter((m) => methods.has(m)), 'OPTIONS'].join(', ');
    if (item) item.description = `Other methods answer 405 \`method_not_allowed\` with \`Allow: ${allow}\` (OPTIONS: the CORS preflight, 204).`;
  }
  doc.components = { ...doc.components, responses: unroutedResponses() };
  return doc;
}

/** A key of the document {@link renderDocument} makes of these arguments (equal keys, equal documents), from the
 * routes' text without rendering: the zod schemas do not depend on the configuration. */
export function documentKey(specs: readonly RouteSpec[], info: DocumentInfo, options: DocumentOptions = {}): string {
  const text = JSON.stringify([
    info,
    options.bearer ? [options.bearer.required, options.bearer.queryTokenPath ?? null] : null,
    specs.map((s) => [
      s.method,
      s.path,
      s.operationId,
      s.summary,
      s.description ?? null,
      s.tag,
      Boolean(s.params),
      Boolean(s.query),
      Boolean(s.body),
      s.bodyOptional ?? null,
      s.localOnly ?? null,
      Object.entries(s.answers).map(([k, a]) => [k, a.description, a.contentType ?? null, Object.keys(a.headers ?? {}), Object.entries(a.optionalHeaders ?? {})]),
    ]),
  ]);
  return createHash('sha256').update(text).digest('hex').slice(0, 24);
}
