/**
 * Errors of the engine store. The HTTP layer maps them to statuses (src/http/errors.ts):
 * not found 404, legacy 410, missing canonical field 422, invalid id 400.
 */

/** The `detail` object of a 422 from the entity routes (spec: Resources, MissingCanonicalField). */
export interface MissingCanonicalFieldDetail {
  readonly error: 'missing_canonical_field';
  readonly field: string;
  readonly project_id: string | null;
  readonly remediation: string;
  readonly fix_cli: string;
}

/**
 * The command that fixes canonical-field problems (the `fix_cli` member): the engine CLI's
 * `doctor --fix` (src/engine-cli) repairs every field it can derive safely and names the exact
 * file and field to set by hand for the rest. `projectId` null (a memory entry of no project)
 * gives the store-wide form.
 */
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

export class MissingCanonicalFieldError extends Error {
  override name = 'MissingCanonicalFieldError';
  constructor(readonly detail: MissingCanonicalFieldDetail) {
    super(detail.remediation);
  }
}

/** A project stored in a legacy format; message is `legacy project format: <reason>`. */
export class LegacyProjectError extends Error {
  override name = 'LegacyProjectError';
  constructor(
    readonly projectId: string,
    readonly reason: string,
  ) {
    super(`legacy project format: ${reason}`);
  }
}

/** An unknown project, episode, scene, or a beat without lineage; message is the detail. */
export class NotFoundError extends Error {
  override name = 'NotFoundError';
}

/**
 * A read of the engine store that took longer than CONSOLE_STORE_READ_TIMEOUT_MS (issue 10,
 * item 2): the HTTP layer answers 503 with `Retry-After`; nothing is cached.
 */
export class StoreReadTimeoutError extends Error {
  override name = 'StoreReadTimeoutError';
  constructor(
    readonly timeoutMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`reading the engine store took longer than ${timeoutMs} ms (CONSOLE_STORE_READ_TIMEOUT_MS): try again`);
  }
}
