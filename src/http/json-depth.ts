/**
 * A bound on the nesting of JSON request bodies. `JSON.parse` reads any depth, but much of
 * what comes after recurses: `JSON.stringify` (a stored workspace blob, an event payload),
 * SQLite's JSON functions (at most 1000 levels), validation. A body nested some thousands of
 * levels deep (a few kilobytes of `[`) overflowed the stack there and answered 500; bounded
 * where bodies enter, no later step can meet such a value.
 */
import { nestedDeeperThan } from '../engine/json-depth.js';
import { ValidationError } from './errors.js';

export { nestedDeeperThan };

/** Deepest nesting of objects and arrays accepted in a request body (`{}` and `[]` are level 1). */
export const MAX_JSON_DEPTH = 64;

/**
 * The 422 for a parsed body nested past {@link MAX_JSON_DEPTH}, or undefined when it is within
 * the bound. Same shape as a JSON syntax error: `loc: ["body"]`.
 */
export function depthError(body: unknown, max: number = MAX_JSON_DEPTH): ValidationError | undefined {
  if (!nestedDeeperThan(body, max)) return undefined;
  return new ValidationError([{ loc: ['body'], msg: `JSON nested deeper than ${max} levels`, type: 'json_too_deep' }]);
}
