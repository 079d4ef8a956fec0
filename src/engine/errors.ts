/** Engine store errors with stable codes; src/http/errors.ts maps them: 404, 410 legacy, 422 missing field, 400 id, 503 timeout. */
import { ServiceError } from '../errors/index.js';

/** The codes of the engine store's errors (`invalid_id` is thrown by ids.ts). */
export type EngineErrorCode =
  | 'invalid_id'
  | 'project_not_found'
  | 'episode_not_found'
  | 'scene_not_found'
  | 'lineage_not_found'
  | 'legacy_project'
  | 'missing_canonical_field'
  | 'store_read_timeout';

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

/**
 * Builds the MissingCanonicalField detail. `where` names the file, relative to the store root;
 * `why` says what is wrong with the field (`is missing`, `cannot be read (…)`); `fix` what to
 * do (default: add it). Neither may hold the file's contents (issue 10, item 4), nor `; `.
 */
export function missingField(
  projectId: string | null,
  field: string,
  where: string,
  why = 'is missing',
  fix = 'add it (see engine-format.md)',
): MissingCanonicalFieldDetail {
  return {
    error: 'missing_canonical_field',
    field,
    project_id: projectId,
    remediation: `Canonical field "${field}" ${why} in ${where}; ${fix} and reload.`,
    fix_cli: fixCli(projectId),
  };
}

/**
 * How a JSON value is named in a message: `a string`, `a number that is not an integer`,
 * `null`, `an array`… Never the value itself (issue 10, item 4: no message quotes a file).
 */
export function jsonTypeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'an integer' : 'a number that is not an integer';
  if (typeof value === 'object') return 'an object';
  return typeof value === 'string' ? (value === '' ? 'an empty string' : 'a string') : `a ${typeof value}`;
}

/**
 * The detail of a canonical member that is absent or of the wrong type (issue 14, item 6): an
 * absent member (or null, or an empty string: no value) `is missing` (add it); any other value
 * `has the wrong type (<found>, expected <expected>)`, and the fix says to make it so.
 * `"format": "2"` is a string, not a missing format.
 * @param expected what the member must be, e.g. `an integer`, `a non-empty string`.
 */
export function fieldProblem(projectId: string | null, field: string, where: string, value: unknown, expected: string): MissingCanonicalFieldDetail {
  if (value === undefined || value === null || value === '') return missingField(projectId, field, where);
  return missingField(projectId, field, where, `has the wrong type (${jsonTypeOf(value)}, expected ${expected})`, `make it ${expected} (see engine-format.md)`);
}

/**
 * What is wrong, as `missingField` was told (`is missing`, `does not match the file name "x"`…),
 * read back from a detail's `remediation`; the whole remediation when it has another shape.
 */
export function missingFieldReason(detail: MissingCanonicalFieldDetail): string {
  const prefix = `Canonical field "${detail.field}" `;
  const { remediation } = detail;
  const end = remediation.lastIndexOf(' in ', remediation.lastIndexOf('; '));
  return remediation.startsWith(prefix) && end > prefix.length ? remediation.slice(prefix.length, end) : remediation;
}

/**
 * The detail of a store file that cannot be read (issue 10, items 2-4): `cannot be read (<why>)`
 * with the problem's own fix; `field` is the file's first canonical field.
 */
export function unreadableField(projectId: string | null, field: string, where: string, problem: { readonly why: string; readonly fix: string }): MissingCanonicalFieldDetail {
  return missingField(projectId, field, where, `cannot be read (${problem.why})`, problem.fix);
}

/**
 * A canonical field is missing, or a store file cannot be used (code `missing_canonical_field`);
 * the answer's `detail` is the MissingCanonicalField object (spec: Resources).
 */
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

/**
 * An unknown project, episode or scene, or a beat without lineage (code `<what>_not_found`);
 * the message is the detail (`unknown project <id>`, `no lineage for beat <id>`…).
 */
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

/**
 * A read of the engine store that took longer than CONSOLE_STORE_READ_TIMEOUT_MS (issue 10,
 * item 2; code `store_read_timeout`): answered 503 with `Retry-After`; nothing is cached.
 */
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
