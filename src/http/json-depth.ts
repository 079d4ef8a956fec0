/**
 * Shape checks of JSON bodies where they enter, in one iterative walk. Depth: later steps recurse
 * (stringify, SQLite JSON, validation) and a deep body overflowed the stack. `__proto__`: every
 * copy by assignment would set the copy's prototype, so such a member is refused (422).
 */
import { ValidationError } from './errors.js';

/** Deepest nesting of objects and arrays accepted in a request body (`{}` and `[]` are level 1). */
export const MAX_JSON_DEPTH = 64;

/** The one member name refused at any depth of a request body. */
export const FORBIDDEN_MEMBER = '__proto__';

/** Where a container sits in the body: its key and its parent's place (the path is spelt out only on a find). */
interface Place {
  readonly parent: Place | null;
  readonly key: string | number;
}

/**
 * The 422 for a body's first shape problem, or undefined: past `max` levels (`json_too_deep`) or
 * a `__proto__` member at any depth (`forbidden_member`, `loc` its path).
 */
export function bodyShapeError(body: unknown, max: number = MAX_JSON_DEPTH): ValidationError | undefined {
  if (body === null || typeof body !== 'object') return undefined;
  const stack: [object, number, Place | null][] = [[body, 1, null]];
  while (stack.length > 0) {
    const [node, depth, place] = stack.pop() as [object, number, Place | null];
    if (depth > max) {
      return new ValidationError([{ loc: ['body'], msg: `JSON nested deeper than ${max} levels`, type: 'json_too_deep' }]);
    }
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const child: unknown = node[i];
        if (child !== null && typeof child === 'object') stack.push([child, depth + 1, { parent: place, key: i }]);
      }
      continue;
    }
    for (const key of Object.keys(node)) {
      if (key === FORBIDDEN_MEMBER) {
        return new ValidationError([
          {
            loc: ['body', ...pathOf({ parent: place, key })],
            msg: `member "${FORBIDDEN_MEMBER}" is not accepted (it would set the prototype of the object it is in); send the data under another name`,
            type: 'forbidden_member',
          },
        ]);
      }
      const child = (node as Record<string, unknown>)[key];
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1, { parent: place, key }]);
    }
  }
  return undefined;
}

function pathOf(place: Place | null): (string | number)[] {
  const out: (string | number)[] = [];
  for (let p = place; p !== null; p = p.parent) out.push(p.key);
  return out.reverse();
}
