import { DispatchError } from './errors.js';

/** engine-format.md §Identifiers, and the path-traversal guard: a passing id is safe to join under the store root. */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** True when `value` is a valid engine id. */
export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value) && !value.includes('..');
}

/** Checks one id before any path is built from it. @throws DispatchError (exit 2) `malformed <name> id "<value>"`. */
export function checkId(name: string, value: string): string {
  if (!isValidId(value)) {
    throw new DispatchError(`malformed ${name} id ${JSON.stringify(value)}`);
  }
  return value;
}
