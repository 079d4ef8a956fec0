/** Request validation with zod: camelCase and snake_case accepted (api-decisions.md §Mutations and lifecycle routes); failures are one 422 of `{ loc, msg, type }`. */
import type { z } from 'zod';
import { ValidationError, type ValidationIssue } from './errors.js';

export type Location = 'body' | 'query' | 'path';

const snakeToCamel = (k: string) => k.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/**
 * `value` with top-level snake_case members renamed to camelCase (a copy only when something is
 * renamed). Members are defined, never assigned, so a `__proto__` member cannot set the prototype.
 */
export function camelizeKeys(value: unknown): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const src = value as Record<string, unknown>;
  // Nothing snake_case (and so no `__proto__`): returned as is.
  let snake = false;
  for (const k of Object.keys(src)) {
    if (k.includes('_')) {
      snake = true;
      break;
    }
  }
  if (!snake) return src;
  const out: [string, unknown][] = [];
  for (const [k, v] of Object.entries(src)) {
    const camel = k.includes('_') ? snakeToCamel(k) : k;
    if (camel !== k && Object.hasOwn(src, camel)) continue; // the camelCase member wins
    out.push([camel, v]);
  }
  return Object.fromEntries(out);
}

/**
 * Parses `input` with `schema`.
 * @throws ValidationError (422) with one issue per problem, `loc` prefixed by `where`.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown, where: Location): z.output<S> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  throw new ValidationError(r.error.issues.map((i) => toIssue(i, where, input)));
}

function toIssue(i: z.core.$ZodIssue, where: Location, input: unknown): ValidationIssue {
  const loc = [where, ...i.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
  // Whatever the schema (type, enum, literal…), an absent required member is `missing`.
  if (i.code !== 'unrecognized_keys' && i.code !== 'custom' && valueAt(input, i.path) === undefined) {
    return { loc, msg: 'Field required', type: 'missing' };
  }
  switch (i.code) {
    case 'invalid_type':
      return { loc, msg: `Input should be a valid ${i.expected}`, type: `${i.expected}_type` };
    case 'too_small':
      return {
        loc,
        msg: i.message,
        type: i.origin === 'string' || i.origin === 'array' ? `${i.origin}_too_short` : i.inclusive === false ? 'greater_than' : 'greater_than_equal',
      };
    case 'too_big':
      return {
        loc,
        msg: i.message,
        type: i.origin === 'string' || i.origin === 'array' ? `${i.origin}_too_long` : i.inclusive === false ? 'less_than' : 'less_than_equal',
      };
    case 'invalid_value':
      return { loc, msg: `Input should be ${i.values.map((v) => `'${String(v)}'`).join(', ')}`, type: 'enum' };
    case 'invalid_format':
      return { loc, msg: i.message, type: 'string_pattern_mismatch' };
    case 'unrecognized_keys':
      return { loc, msg: `Unexpected members: ${i.keys.join(', ')}`, type: 'extra_forbidden' };
    case 'custom': {
      // A check that names its rule (the identifier rule: `invalid_id`, schemas.ts) gives its type.
      const type = typeof i.params?.type === 'string' ? i.params.type : 'value_error';
      return { loc, msg: i.message, type };
    }
    default:
      return { loc, msg: i.message, type: 'value_error' };
  }
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v: unknown = input;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}
