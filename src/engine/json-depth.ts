/**
 * The nesting of a parsed JSON value. `JSON.parse` reads any depth, but much of what comes
 * after it recurses (`JSON.stringify`, `postMessage`, SQLite's JSON functions, validation) and
 * overflows the stack some thousands of levels down. Request bodies (src/http/json-depth.ts)
 * and store files (src/engine/read-store-file.ts) are bounded with this check where they enter.
 */

/**
 * Whether `value` nests objects and arrays more than `max` levels deep (`{}` and `[]` are
 * level 1). Iterative, so that it is itself safe at any depth; stops at the first container
 * past the bound.
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
