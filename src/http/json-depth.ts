/**
 * Checks of the shape of JSON request bodies, made where bodies enter (the JSON body parser in
 * app.ts), in one iterative walk, before any route sees the body.
 *
 * Depth. `JSON.parse` reads any depth, but much of what comes after recurses: `JSON.stringify`
 * (a stored workspace blob, an event payload), SQLite's JSON functions (at most 1000 levels),
 * validation. A body nested some thousands of levels deep (a few kilobytes of `[`) overflowed
 * the stack there and answered 500; bounded where bodies enter, no later step can meet such a
 * value.
 *
 * `__proto__` (issue 10, item 10). `JSON.parse` makes a `__proto__` member an own member, but
 * every later step that copies the body by assignment (`out[k] = v`: the camelCase renaming,
 * zod's object and record parsing) sets the copy's prototype instead: the member vanished, or
 * its members became inherited ones. Such a body is refused with a 422 naming where the
 * member is; `constructor`, `prototype` and every other name are ordinary members.
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
 * The 422 for the first problem of a parsed body's shape, or undefined when it has none:
 * nested past `max` levels (`loc: ["body"]`, type `json_too_deep`), or an own member named
 * `__proto__` at any depth (`loc` is its path, e.g. `["body", "meta", "a", 0, "__proto__"]`,
 * type `forbidden_member`). One iterative walk: safe at any depth, and it stops at the first
 * problem.
 * @param max deepest nesting accepted (default {@link MAX_JSON_DEPTH}).
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
