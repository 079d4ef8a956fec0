/** Engine store errors with stable codes; src/http/errors.ts maps them: 404, 410 legacy, 422 missing field, 400 id, 503 timeout. */
import { ServiceError } from '../errors/index.js';

/** The codes of the engine store's errors (`invalid_id` is thrown by ids.ts). */
export type EngineErrorCode = 'invalid_id' | 'project_not_found' | 'episode_not_found' | 'scene_not_found' | 'lineage_not_found' | 'legacy_project' | 'missing_canonical_field' | 'store_read_timeout';

/** The `detail` object of a 422 from the entity routes (service-spec.md §MissingCanonicalField). */
export interface MissingCanonicalFieldDetail {
  readonly error: 'missing_canonical_field';
  readonly field: string;
  readonly project_id: string | null;
  readonly remediation: string;
  readonly fix_cli: string;
}

/** The `fix_cli` command for canonical-field problems: engine CLI `doctor --fix`; `projectId` null gives the store-wide form. */
export function fixCli(projectId: string | null): string {
  return projectId === null ? 'npm run engine -- doctor --fix' : `npm run engine -- doctor --project ${projectId} --fix`;
}

/** The MissingCanonicalField detail: `where` the store-relative file, `why` what is wrong, `fix` what to do; never the file's contents (a client must not see store data), nor `; `. */
export function missingField(projectId: string | null, field: string, where: string, why = 'is missing', fix = 'add it (see engine-format.md)'): MissingCanonicalFieldDetail {
  return {
    error: 'missing_canonical_field',
    field,
    project_id: projectId,
    remediation: `Canonical field "${field}" ${why} in ${where}; ${fix} and reload.`,
    fix_cli: fixCli(projectId),
  };
}

/** A JSON value's kind in words (`a string`, `null`, `an array`…), never the value: no message quotes a file. */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number that is not an integer';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'string' ? (value === '' ? 'an empty string' : 'a string') : `a ${typeof value}`;
}

/**
 * The detail of a canonical member absent (null and `""` too: `is missing`) or of the wrong type
 * (`has the wrong type (<found>, expected <expected>)`, so `"format": "2"` is not missing).
 */
export function fieldProblem(projectId: string | null, field: string, where: string, value: unknown, expected: string): MissingCanonicalFieldDetail {
  if (value === undefined || value === null || value === '') return missingField(projectId, field, where);
  return missingField(projectId, field, where, `has the wrong type (${jsonTypeOf(value)}, expected ${expected})`, `make it ${expected} (see engine-format.md)`);
}

/** The `why` a detail was built with, read back from its `remediation` (the whole of it when of another shape). */
export function missingFieldReason(detail: MissingCanonicalFieldDetail): string {
  const prefix = `Canonical field "${detail.field}" `;
  const { remediation } = detail;
  const end = remediation.lastIndexOf(' in ', remediation.lastIndexOf('; '));
  return remediation.startsWith(prefix) && end > prefix.length ? remediation.slice(prefix.length, end) : remediation;
}

/** The detail of a store file that cannot be read: `cannot be read (<why>)`; `field` is its first canonical field. */
export function unreadableField(projectId: string | null, field: string, where: string, problem: { readonly why: string; readonly fix: string }): MissingCanonicalFieldDetail {
  return missingField(projectId, field, where, `cannot be read (${problem.why})`, problem.fix);
}

/** A missing canonical field or an unusable store file; `detail` is service-spec.md §MissingCanonicalField. */
export class MissingCanonicalFieldError extends ServiceError<'missing_canonical_field'> {
  override name = 'MissingCanonicalFieldError';
  readonly #detail: MissingCanonicalFieldDetail;
  constructor(detail: MissingCanonicalFieldDetail) {
    super('missing_canonical_field', detail.remediation);
    this.#detail = detail;
  }

  override get detail(): MissingCanonicalFieldDetail {
    return this.#detail;
  }
}

/** A project stored in a legacy format (code `legacy_project`); message is `legacy project format: <reason>`. */
export class LegacyProjectError extends ServiceError<'legacy_project'> {
  override name = 'LegacyProjectError';
  constructor(
    readonly projectId: string,
    readonly reason: string,
  ) {
    super('legacy_project', `legacy project format: ${reason}`);
  }
}

/** What a {@link NotFoundError} did not find: its code is `<what>_not_found`. */
export type NotFoundWhat = 'project' | 'episode' | 'scene' | 'lineage';

/** An unknown project, episode or scene, or a beat without lineage; the message is the detail (`unknown project <id>`…). */
export class NotFoundError extends ServiceError<`${NotFoundWhat}_not_found`> {
  override name = 'NotFoundError';
  constructor(
    readonly what: NotFoundWhat,
    message: string,
  ) {
    super(`${what}_not_found`, message);
  }
}

/** The {@link NotFoundError} of a project id that names no project: `unknown project <id>`. */
export function unknownProject(projectId: string): NotFoundError {
  return new NotFoundError('project', `unknown project ${projectId}`);
}

/** A store read past CONSOLE_STORE_READ_TIMEOUT_MS: 503 with `Retry-After`, nothing cached (api-decisions.md §Network and safety defaults). */
export class StoreReadTimeoutError extends ServiceError<'store_read_timeout'> {
  override name = 'StoreReadTimeoutError';
  constructor(
    readonly timeoutMs: number,
    retryAfterSeconds: number,
    options: { readonly cause?: unknown } = {},
  ) {
    super('store_read_timeout', `reading the engine store took longer than ${timeoutMs} ms (CONSOLE_STORE_READ_TIMEOUT_MS): try again`, {
      retryAfterSeconds,
      cause: options.cause,
    });
  }
}
