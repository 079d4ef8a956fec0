/**
 * A bound on the nesting of JSON request bodies. `JSON.parse` reads any depth, but much of
 * what comes after recurses: `JSON.stringify` (a stored workspace blob, an event payload),
 * SQLite's JSON functions (at most 1000 levels), validation. A body nested some thousands of
 * levels deep (a few kilobytes of `[`) overflowed the stack there and answered 500; bounded
 * where bodies enter, no later step can meet such a value.
 */
import { ValidationError } from './errors.js';

/** Deepest nesting of objects and arrays accepted in a request body (`{}` and `[]` are level 1). */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether `value` nests objects and arrays more than `max` levels deep. Iterative, so that it
 * is itself safe at any depth; stops at the first container past the bound.
 */
export function nestedDeeperThan(value: unknown, max: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const stack: [object, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [object, number];
    if (depth > max) return true;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child as object, depth + 1]);
    }
  }
  return false;
}

/**
 * The 422 for a parsed body nested past {@link MAX_JSON_DEPTH}, or undefined when it is within
 * the bound. Same shape as a JSON syntax error: `loc: ["body"]`.
 */
export function depthError(body: unknown, max: number = MAX_JSON_DEPTH): ValidationError | undefined {
  if (!nestedDeeperThan(body, max)) return undefined;
  return new ValidationError([{ loc: ['body'], msg: `JSON nested deeper than ${max} levels`, type: 'json_too_deep' }]);
}
