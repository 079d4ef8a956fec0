// The error catalogue (style.md, "Errors in one catalogue"): one table maps every code to status, headers and
// body `{ detail, code }` (service-spec.md §Errors; api-decisions.md §Validation errors).
import type { ConsoleErrorCode } from '../console/decision.js';
import type { EngineErrorCode } from '../engine/errors.js';
import { ServiceError, type ServiceErrorLike } from '../errors/index.js';
import type { ClusterErrorCode } from '../cluster/errors.js';
import type { MainErrorCode } from '../config/config.js';
import type { ProcessErrorCode } from '../process/errors.js';
import type { StateErrorCode } from '../state/errors.js';
import type { SupervisorErrorCode } from '../supervisor/errors.js';
import type { TerminalErrorCode } from '../terminals/errors.js';

/** Codes of the errors raised by the HTTP layer itself. */
export type HttpErrorCode =
  | 'validation_failed'
  | 'project_mismatch'
  | 'bad_request'
  | 'body_too_large'
  | 'route_not_found'
  | 'method_not_allowed'
  | 'host_not_allowed'
  | 'unauthorized'
  | 'invalid_token'
  | 'not_loopback'
  | 'upstream_unreachable'
  | 'proxy_loop'
  | 'shutting_down'
  | 'malformed_request'
  | 'request_timeout'
  | 'headers_too_large'
  | 'chunk_extensions_too_large'
  | 'memory_entry_not_found'
  | 'workspace_not_found'
  | 'stale_revision'
  | 'report_too_large'
  | 'media_not_found'
  | 'media_forbidden'
  | 'too_many_streams'
  | 'too_many_streams_from_address'
  | 'cross_site_request'
  | 'range_not_satisfiable'
  | 'precondition_failed'
  | 'not_ready'
  | 'internal';

/** Every code the service raises: each folder's, and the HTTP layer's. */
export type ErrorCode = EngineErrorCode | SupervisorErrorCode | ProcessErrorCode | TerminalErrorCode | StateErrorCode | ConsoleErrorCode | ClusterErrorCode | MainErrorCode | HttpErrorCode;

/** One element of a 422 validation detail. `loc` starts with `body`, `query` or `path`. */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
  /** Facts about the problem, e.g. the allowed values (`ctx.allowed` of an unknown slash command). */
  readonly ctx?: Readonly<Record<string, unknown>>;
}

/** An error raised by the HTTP layer: a code of {@link HttpErrorCode}; the message is the detail. */
export class HttpError extends ServiceError<HttpErrorCode> {
  override name = 'HttpError';
}

/** A 422 with the validation detail (code `validation_failed`). */
export class ValidationError extends HttpError {
  override name = 'ValidationError';
  constructor(readonly issues: readonly ValidationIssue[]) {
    super('validation_failed', issues.map((i) => `${i.loc.join('.')}: ${i.msg}`).join('; ') || 'validation failed');
  }

  override get detail(): readonly ValidationIssue[] {
    return this.issues;
  }
}

/** A path the router knows, with a method it does not serve there (code `method_not_allowed`, `Allow`). */
export class MethodNotAllowedError extends HttpError {
  override name = 'MethodNotAllowedError';
  /** The methods the path is served with, for the `Allow` header. */
  constructor(
    method: string,
    path: string,
    readonly allowed: readonly string[],
  ) {
    super('method_not_allowed', `method ${method} is not allowed on ${path}: allowed ${allowed.join(', ')}`);
  }
}

/** A Range outside the file (code `range_not_satisfiable`, `Content-Range: bytes *\/<size>`). */
export class RangeNotSatisfiableError extends HttpError {
  override name = 'RangeNotSatisfiableError';
  constructor(readonly size: number) {
    super('range_not_satisfiable', `range not satisfiable (the file has ${size} bytes)`);
  }
}

/** A workspace PUT with another revision than the current one (code `stale_revision`; the body also carries `revision`). */
export class StaleRevisionError extends HttpError {
  override name = 'StaleRevisionError';
  constructor(
    message: string,
    readonly revision: number,
  ) {
    super('stale_revision', message);
  }
}

/** `GET /api/ready` found this instance not ready (code `not_ready`); the body also carries `ready: false` and every check. */
export class NotReadyError extends HttpError {
  override name = 'NotReadyError';
  /** @param checks every check; those without `detail` (the caller has no token) are named alone. */
  constructor(readonly checks: readonly { readonly name: string; readonly ok: boolean; readonly detail?: string }[]) {
    super(
      'not_ready',
      `not ready: ${checks
        .filter((c) => !c.ok)
        .map((c) => (c.detail === undefined ? c.name : `${c.name} (${c.detail})`))
        .join('; ')}`,
    );
  }
}

/** What the catalogue says of one code. */
export interface CatalogueEntry {
  readonly status: number;
  /** What the code means, in the OpenAPI document and the README. */
  readonly means: string;
  /** Headers of the answer, from the error's facts. */
  readonly headers?: (err: ServiceErrorLike) => Readonly<Record<string, string>>;
  /** Members of the body besides `detail` and `code`. */
  readonly members?: (err: ServiceErrorLike) => Readonly<Record<string, unknown>>;
  /** Never answered as itself (a bug, or a start-up error): 500 `internal`, logged with its stack. */
  readonly internal?: true;
  /** Also answered before an operation is chosen (unknown paths, refused Host, token…). */
  readonly unrouted?: true;
}

const retryAfter = (err: ServiceErrorLike): Record<string, string> => (err.retryAfterSeconds === undefined ? {} : { 'Retry-After': String(err.retryAfterSeconds) });

/** The catalogue: every code, its status and what it means. A code missing here does not compile. */
export const ERROR_CATALOGUE: { readonly [C in ErrorCode]: CatalogueEntry } = {
  // 400
  invalid_id: { status: 400, means: 'A malformed identifier in the path or the query (the path-traversal guard); the detail is the message, naming the parameter and the rule.' },
  bad_request: { status: 400, unrouted: true, means: 'The request could not be read (the body was cut short, or its size could not be read).' },
  malformed_request: { status: 400, unrouted: true, means: 'Node’s HTTP parser refused the request (a malformed request line or header, a target that is not a path); the connection is closed.' },
  // 401, 403
  unauthorized: {
    status: 401,
    unrouted: true,
    means: 'CONSOLE_API_TOKEN is set and the request carries no bearer token.',
    headers: () => ({ 'WWW-Authenticate': 'Bearer realm="console-backend"' }),
  },
  invalid_token: {
    status: 401,
    unrouted: true,
    means: 'CONSOLE_API_TOKEN is set and the request carries another token (or a malformed Authorization header).',
    headers: () => ({ 'WWW-Authenticate': 'Bearer realm="console-backend", error="invalid_token"' }),
  },
  not_loopback: { status: 403, means: '`POST /api/internal/bus` from a caller that is not a direct loopback peer (another address, or through a proxy).' },
  media_forbidden: { status: 403, means: 'The media file may not be served.' },
  cross_site_request: {
    status: 403,
    unrouted: true,
    means: 'A POST, PUT or DELETE from a browser page of another site: its `Origin` is neither this service’s own (the request’s `Host`) nor an allowed CORS origin (`Origin: null` included).',
  },
  // 404, 405
  route_not_found: { status: 404, unrouted: true, means: 'No operation has this path, whatever the method.' },
  project_not_found: { status: 404, means: 'No project has this id.' },
  episode_not_found: { status: 404, means: 'The project has no episode with this id.' },
  scene_not_found: { status: 404, means: 'The episode has no scene with this id.' },
  lineage_not_found: { status: 404, means: 'The beat (or take) has no lineage: `no lineage for beat <id>`.' },
  unknown_job: { status: 404, means: 'No generation job has this proposal id.' },
  memory_entry_not_found: { status: 404, means: 'No memory entry file has this id.' },
  workspace_not_found: { status: 404, means: 'No workspace state was stored under this id.' },
  terminal_not_running: { status: 404, means: 'The project has no running terminal.' },
  media_not_found: { status: 404, means: 'No such media file in the project (also a link out of its folder, a pipe, a folder).' },
  method_not_allowed: {
    status: 405,
    unrouted: true,
    means: 'The path has operations, but not with this method; `Allow` lists its methods.',
    headers: (err) => ({ Allow: (err as MethodNotAllowedError).allowed.join(', ') }),
  },
  // 408, 409, 410, 412, 413, 416, 421
  request_timeout: { status: 408, unrouted: true, means: 'The request was not received in time; the connection is closed.' },
  job_not_running: { status: 409, means: 'The generation job has ended already.' },
  stale_revision: {
    status: 409,
    means: 'The workspace `revision` is not the current one; the body’s `revision` is the current one, and nothing was written.',
    members: (err) => ({ revision: (err as StaleRevisionError).revision }),
  },
  legacy_project: { status: 410, means: 'The project is stored in a legacy format: `legacy project format: <reason>`.' },
  precondition_failed: { status: 412, means: 'An `If-Match` or `If-Unmodified-Since` precondition of a media request failed.' },
  body_too_large: { status: 413, unrouted: true, means: 'The request body is larger than CONSOLE_MAX_BODY_BYTES (after decompression).' },
  chunk_extensions_too_large: { status: 413, unrouted: true, means: 'The chunk extensions of a chunked body are too large (Node’s parser); the connection is closed.' },
  report_too_large: { status: 413, means: 'The reported workspace blob is larger than CONSOLE_WORKSPACE_REPORT_MAX_BYTES.' },
  range_not_satisfiable: {
    status: 416,
    means: 'The Range lies outside the media file; `Content-Range: bytes */<size>`.',
    headers: (err) => ({ 'Content-Range': `bytes */${(err as RangeNotSatisfiableError).size}` }),
  },
  host_not_allowed: {
    status: 421,
    unrouted: true,
    means: 'The Host header (or an absolute request target) names a host this instance does not serve (CONSOLE_ALLOWED_HOSTS; the DNS-rebinding defence). Nothing was done.',
  },
  // 422
  validation_failed: {
    status: 422,
    unrouted: true,
    means:
      'The request failed validation: `detail` lists `{ loc, msg, type }` (and `ctx` for some), `loc` starting with `body`, `query` or `path`. Also a body that is not JSON, nested too deep or holding `__proto__`.',
  },
  missing_canonical_field: { status: 422, means: 'A canonical field is missing, or a store file cannot be used: `detail` is the MissingCanonicalField object.' },
  project_mismatch: { status: 422, means: 'The body’s `project` differs from the path’s: `project path/body mismatch`.' },
  invalid_decision: { status: 422, means: 'A decision value other than `approved`, `rejected` or `deferred`.' },
  // 431
  headers_too_large: { status: 431, unrouted: true, means: 'The request line and headers are larger than Node’s limit (16 KB); the connection is closed.' },
  // 500
  tool_missing: { status: 500, means: 'The dispatch tool file is missing (spec: Generation, rule 3); the detail names it and no process was started.' },
  spawn_failed: { status: 500, means: 'The operating system refused to start the dispatch tool; the detail ends with the errno (`EAGAIN`…).' },
  spawn_refused: { status: 500, means: 'The operating system refused to start a program; the detail ends with the errno.' },
  internal: {
    status: 500,
    unrouted: true,
    means: 'An error the service did not expect (a bug, a module that cannot be loaded): the detail is generic, `requestId` finds the error and its stack in the log.',
  },
  invalid_transition: { status: 500, internal: true, means: 'A job state transition the table has no row for (a bug).' },
  config_invalid: { status: 500, internal: true, means: 'A bad configuration value (stops start-up).' },
  startup_guard_failed: { status: 500, internal: true, means: 'A start-up guard failed (stops start-up).' },
  state_db_open_failed: { status: 500, internal: true, means: 'The state database cannot be opened (stops start-up).' },
  instance_id_in_use: { status: 500, internal: true, means: 'Cluster mode: another live instance heartbeats under CONSOLE_INSTANCE_ID (stops start-up).' },
  // 502, 503, 504, 507, 508
  upstream_unreachable: { status: 502, means: 'SERVICE_WRITE_UPSTREAM could not be reached, or cut the connection before answering.' },
  too_many_streams: {
    status: 503,
    means: 'The bound on open event streams in all is reached (CONSOLE_SSE_MAX_STREAMS, at most half the descriptor limit); the stream was not opened.',
    headers: retryAfter,
  },
  too_many_streams_from_address: {
    status: 429,
    means: 'This remote address has the most event streams open it may (CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS); the stream was not opened.',
    headers: retryAfter,
  },
  job_capacity: { status: 503, means: 'The cap on running generation jobs (CONSOLE_MAX_RUNNING_JOBS) is reached; no process was started.', headers: retryAfter },
  store_read_timeout: { status: 503, means: 'Reading the store took longer than CONSOLE_STORE_READ_TIMEOUT_MS; nothing was cached.', headers: retryAfter },
  state_db_busy: { status: 503, means: 'The state database is busy: nothing was stored, try again.', headers: retryAfter },
  state_db_unavailable: { status: 503, means: 'The state database is read-only, failing or damaged: nothing was stored.' },
  state_db_unreachable: { status: 503, means: 'The PostgreSQL state database (cluster mode) cannot be reached now: nothing was stored, try again.', headers: retryAfter },
  shutting_down: { status: 503, unrouted: true, means: 'The service is shutting down; the connection is closed.' },
  not_ready: {
    status: 503,
    means: '`GET /api/ready`: a check failed (the store folder, the dispatch tool, the state database, the worker pool); the body lists every check.',
    members: (err) => ({ ready: false, checks: (err as NotReadyError).checks }),
  },
  terminal_program_missing: { status: 503, means: 'The terminal program (TTYD_BIN) cannot be found or is not executable.' },
  terminal_ports_exhausted: { status: 503, means: 'Every port of CONSOLE_TTYD_PORTS is taken.' },
  terminal_start_failed: { status: 503, means: 'The terminal program was refused by the operating system (the errno ends the detail), exited during start-up, or the service is stopping.' },
  owner_not_acknowledged: {
    status: 504,
    means: 'Cluster mode: the instance that runs the job (or terminal) did not acknowledge the routed cancel (or stop) within 5 s; a cancel stays recorded and is carried out when that instance can.',
  },
  state_db_full: { status: 507, means: 'The state database has no space left on its disk: nothing was stored.' },
  proxy_loop: { status: 508, means: 'SERVICE_WRITE_UPSTREAM forwards back to this service.' },
};

/** The codes an answer can carry (every code but the internal ones), in catalogue order. */
export const ANSWERED_CODES: readonly ErrorCode[] = (Object.keys(ERROR_CATALOGUE) as ErrorCode[]).filter((c) => ERROR_CATALOGUE[c].internal !== true);

/** An error answer: status, headers and the JSON body `{ detail, code, … }`. */
export interface ErrorAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: { readonly detail: unknown; readonly code: string; readonly [member: string]: unknown };
}

const INTERNAL: ErrorAnswer = Object.freeze({ status: 500, headers: {}, body: Object.freeze({ detail: 'internal server error', code: 'internal' }) });

/**
 * The catalogue's answer to an error. An internal or unknown code is a 500 `internal` whose generic detail names
 * nothing internal, with the `requestId` that finds the error in the log.
 */
export function answerOf(err: ServiceErrorLike, requestId?: string): ErrorAnswer {
  const entry = (ERROR_CATALOGUE as Readonly<Record<string, CatalogueEntry>>)[err.code];
  if (entry === undefined || entry.internal === true || err.code === 'internal') {
    return requestId === undefined ? INTERNAL : { ...INTERNAL, body: { ...INTERNAL.body, requestId } };
  }
  return {
    status: entry.status,
    headers: entry.headers?.(err) ?? {},
    body: { detail: err.detail ?? err.message, code: err.code, ...entry.members?.(err) },
  };
}
