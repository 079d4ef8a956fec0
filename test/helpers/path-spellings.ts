/**
 * fast-check arbitraries of request-target spellings for every declared route: the same route written in other ways a client may write it. Some changes keep the
 * route for the router (letter case, percent-encoding of any character but a separating `/`,
 * one trailing slash, a query, an absolute-form target, HEAD for a GET route); others make the
 * target another path (a doubled slash, a `.` or `..` segment, an encoded or back- slash as
 * separator, a `;` suffix, another method). Each spelling says which kind it is, so a test can
 * check the router's match against what was meant.
 */
import fc from 'fast-check';
import type { RouteSpec } from '../../src/http/route.js';

/** One spelling of a route. */
export interface Spelling {
  /** The declared route it was made from. */
  readonly route: RouteSpec;
  /** The method sent. */
  readonly method: string;
  /** The request target, as sent. */
  readonly target: string;
  /** The parameters meant, decoded (the router must give exactly these when `preserving`). */
  readonly params: Readonly<Record<string, string>>;
  /** Only changes that keep the route were made: the router must match `route` with `params`. */
  readonly preserving: boolean;
  /** The changes made, by name (for figures and failure messages). */
  readonly changes: readonly string[];
}

/** Parameter values: plain ids, and ones that need encoding (a slash, a percent sign, dots, Unicode…). */
const VALUES = ['x1', 'tk_0001', 'harbor-lights', 'a.b', 'a b', 'é', 'a/b', '%', '..', '.', 'a?b', 'a#b', 'a;b', 'A+B', '~x', 'ü/..'];
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH'];

/** `c` percent-encoded (UTF-8), hex digits in upper or lower case. */
function percent(c: string, lower: boolean): string {
  return [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')[lower ? 'toLowerCase' : 'toUpperCase']()}`).join('');
}

/** The characters a parameter value must have encoded in a path segment (find-my-way splits on `/`, cuts at `?`, `#`; `%` starts an escape). */
const MUST_ENCODE = /[/?#% ]|[^\x21-\x7e]/;

/**
 * Spellings of the given routes. `port` is the service's, for absolute-form targets (their
 * authority must pass the Host check).
 */
export function spellingArb(routes: readonly RouteSpec[], port: number): fc.Arbitrary<Spelling> {
  return fc
    .record({
      route: fc.constantFrom(...routes),
      values: fc.array(fc.constantFrom(...VALUES), { minLength: 4, maxLength: 4 }),
      // Per character of the path: [upper-case it, percent-encode it, lower-case hex].
      charBits: fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 5 }), fc.boolean()), { minLength: 120, maxLength: 120 }),
      trailing: fc.constantFrom('', '', '', '/', '/', '//'),
      query: fc.constantFrom('', '', '?a=1', '?token=x&b=%2F', '?%2F=%3F', '#frag'),
      absolute: fc.integer({ min: 0, max: 9 }),
      // About half the spellings keep the route; the others change it in one way.
      breaking: fc.constantFrom(
        'none',
        'none',
        'none',
        'none',
        'none',
        'none',
        'none',
        'none',
        'none',
        'none',
        'double-slash',
        'dot-segment',
        'dotdot-segment',
        'encoded-separator',
        'backslash',
        'semicolon',
        'leading-double-slash',
        'method',
      ),
      at: fc.nat(),
      method: fc.constantFrom(...METHODS),
      head: fc.boolean(),
    })
    .map(({ route, values, charBits, trailing, query, absolute, breaking, at, method, head }) => {
      const changes: string[] = [];
      const params: Record<string, string> = {};
      let vi = 0;
      // Segments of the template, spelled: static characters re-cased or encoded, parameters encoded.
      const segments = route.path
        .split('/')
        .slice(1)
        .map((seg, si) => {
          if (seg.startsWith(':')) {
            const v = values[vi++ % values.length] as string;
            params[seg.slice(1)] = v;
            // Encode what must be, and each other character at random.
            let out = '';
            for (const [ci, c] of [...v].entries()) {
              const [, enc, lower] = charBits[(si * 17 + ci) % charBits.length] as [boolean, number, boolean];
              out += MUST_ENCODE.test(c) || enc === 0 ? percent(c, lower) : c;
            }
            return out;
          }
          let out = '';
          for (const [ci, c] of [...seg].entries()) {
            const [up, enc, lower] = charBits[(si * 31 + ci) % charBits.length] as [boolean, number, boolean];
            if (enc === 0) {
              out += percent(up ? c.toUpperCase() : c, lower);
              changes.push('encoded');
            } else {
              out += up ? c.toUpperCase() : c;
              if (up && c.toUpperCase() !== c) changes.push('case');
            }
          }
          return out;
        });
      let sent = route.method.toUpperCase();
      if (sent === 'GET' && head) {
        sent = 'HEAD';
        changes.push('head');
      }
      let preserving = true;
      let path = `/${segments.join('/')}`;
      const slashAt = () => {
        const slashes = [...path.matchAll(/\//g)].map((m) => m.index as number);
        return slashes[at % slashes.length] as number;
      };
      switch (breaking) {
        case 'double-slash': {
          const i = slashAt();
          path = `${path.slice(0, i)}/${path.slice(i)}`;
          break;
        }
        case 'dot-segment': {
          const i = slashAt();
          path = `${path.slice(0, i)}/.${path.slice(i)}`;
          break;
        }
        case 'dotdot-segment': {
          const i = slashAt();
          path = `${path.slice(0, i)}/x/..${path.slice(i)}`;
          break;
        }
        case 'encoded-separator': {
          const i = slashAt();
          if (i === 0) path = `%2F${path.slice(1)}`;
          else path = `${path.slice(0, i)}${at % 2 ? '%2F' : '%2f'}${path.slice(i + 1)}`;
          break;
        }
        case 'backslash': {
          const i = slashAt();
          path = i === 0 ? path : `${path.slice(0, i)}\\${path.slice(i + 1)}`;
          break;
        }
        case 'semicolon':
          path = `${path};x`;
          break;
        case 'leading-double-slash':
          path = `/${path}`;
          break;
        case 'method':
          // Another method than the route's (HEAD and GET count as one for a GET route).
          if (method !== sent && !(route.method === 'get' && (method === 'GET' || method === 'HEAD'))) sent = method;
          break;
      }
      const changed =
        breaking === 'method' ? sent !== route.method.toUpperCase() && !(route.method === 'get' && sent === 'HEAD') : breaking === 'backslash' ? path.includes('\\') : breaking !== 'none';
      if (changed) {
        preserving = false;
        changes.push(breaking);
      }
      if (trailing === '/') changes.push('trailing-slash');
      if (trailing === '//') {
        changes.push('double-trailing-slash');
        preserving = false;
      }
      path += trailing;
      if (query !== '') changes.push(query.startsWith('#') ? 'fragment' : 'query');
      let target = path + query;
      if (absolute === 0 && target.startsWith('/') && !target.startsWith('//')) {
        target = `http://127.0.0.1:${port}${target}`;
        changes.push('absolute-form');
        // The router refuses a fragment in an absolute-form target (find-my-way: "fragments are
        // not valid in an HTTP request target"), where it drops one after an origin-form path.
        if (query.startsWith('#')) preserving = false;
      }
      const spelling: Spelling = { route, method: sent, target, params, preserving, changes: [...new Set(changes)] };
      // fast-check prints a failing value with this (not the whole route declaration).
      return Object.assign(spelling, { [fc.toStringMethod]: () => describeSpelling(spelling) });
    });
}

/** `METHOD target (from METHOD path, preserving|changed: changes)`, for failure messages. */
export function describeSpelling(s: Spelling): string {
  return `${s.method} ${s.target} (from ${s.route.method.toUpperCase()} ${s.route.path}, ${s.preserving ? 'preserving' : 'changed'}: ${s.changes.join(', ') || 'as declared'})`;
}
