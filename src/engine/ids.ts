/**
 * The identifier guard (engine-format.md, Identifiers): every project, episode, scene, beat,
 * shot, take and memory-entry id is checked before a path is built from it.
 */

/** A valid id: a letter or digit, then up to 127 letters, digits, `.`, `_` or `-`; never `..`. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Thrown for a malformed id; the HTTP layer answers 400 with the message as detail. */
export class InvalidIdError extends Error {
  override name = 'InvalidIdError';
}

/** True when `value` is a valid identifier. */
export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value) && !value.includes('..');
}

/**
 * Returns `value` when it is a valid identifier.
 * @param param the parameter's name, used in the message (e.g. `project_id`).
 * @throws InvalidIdError `invalid <param>: …` naming the parameter.
 */
export function checkId(param: string, value: unknown): string {
  if (isValidId(value)) return value;
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value) : String(value);
  throw new InvalidIdError(
    `invalid ${param} ${shown}: expected 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'`,
  );
}
