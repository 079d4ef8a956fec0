/**
 * The identifier guard (engine-format.md, Identifiers): every project, episode, scene, beat,
 * shot, take and memory-entry id is checked before a path is built from it. One rule for every
 * identifier the service takes (issue 11, item 6): in a path or a query it is this guard (400
 * `invalid_id`), in a body the same rule as a validation issue (422, src/http/schemas.ts).
 */
import { ServiceError } from '../errors/index.js';

/** A valid id: a letter or digit, then up to 127 letters, digits, `.`, `_` or `-`; never `..`. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** What a valid identifier is, in words: the end of every message about a malformed one. */
export const ID_RULE = "expected 1-128 characters of letters, digits, '.', '_' or '-', starting with a letter or digit, without '..'";

/** Thrown for a malformed id (code `invalid_id`); answered 400 with the message as detail. */
export class InvalidIdError extends ServiceError<'invalid_id'> {
  override name = 'InvalidIdError';
  constructor(message: string) {
    super('invalid_id', message);
  }
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
  throw new InvalidIdError(invalidIdMessage(param, value));
}

/**
 * The message about a malformed identifier: `invalid <param> "<value>": expected …` (the value
 * cut at 64 characters). The same words for the 400 of a path or query and the 422 issue of a body.
 */
export function invalidIdMessage(param: string, value: unknown): string {
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value) : String(value);
  return `invalid ${param} ${shown}: ${ID_RULE}`;
}
