import { DispatchError } from './errors.js';

/**
 * The identifier rule of engine-format.md, "Identifiers": 1..128 characters, starting
 * with a letter or digit, then letters, digits, `.`, `_` or `-`; never containing `..`.
 * The rule is the path-traversal guard: an id that passes cannot name a parent directory,
 * an absolute path or a hidden file, so it is safe to join under the store root.
 */
export const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** True when `value` is a valid engine id. */
export function isValidId(value: string): boolean {
  return ID_PATTERN.test(value) && !value.includes('..');
}

/**
 * Checks one id before any path is built from it.
 * @param name the flag or entity it came from (`project`, `shot`), used in the message.
 * @throws DispatchError (exit 2) `malformed <name> id "<value>"`.
 */
export function checkId(name: string, value: string): string {
  if (!isValidId(value)) {
    throw new DispatchError(`malformed ${name} id ${JSON.stringify(value)}`);
  }
  return value;
}
