/**
 * The identifier guard (engine-format.md §Identifiers), checked before any path is built: 400
 * `invalid_id` in a path or query, the same rule as a 422 issue in a body (src/http/schemas.ts).
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

/** Returns `value` when valid. @throws InvalidIdError `invalid <param>: …` naming the parameter. */
export function checkId(param: string, value: unknown): string {
  if (isValidId(value)) return value;
  throw new InvalidIdError(invalidIdMessage(param, value));
}

/** `invalid <param> "<value>": expected …` (value cut at 64 chars), the same for 400 and 422. */
export function invalidIdMessage(param: string, value: unknown): string {
  const shown = typeof value === 'string' ? JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value) : String(value);
  return `invalid ${param} ${shown}: ${ID_RULE}`;
}
