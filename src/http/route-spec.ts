/** How a route is declared (style.md): once, with zod schemas for inputs and answers; route.ts serves it, openapi-document.ts documents it. */
import type { Request, RequestHandler, Response } from 'express';
import type { HTTPMethod } from 'find-my-way';
import type { z } from 'zod';

export type Method = 'get' | 'post' | 'put' | 'delete';

/** One documented answer. `schema` is the JSON body; `contentType` defaults to JSON. */
export interface AnswerSpec {
  readonly description: string;
  readonly schema?: z.ZodType;
  readonly contentType?: string;
  /** Headers always sent, by name: what each says. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers sent only in some answers (a next page's cursor), by name: what each says and when it comes. */
  readonly optionalHeaders?: Readonly<Record<string, string>>;
}

/** Parsed inputs handed to a handler. */
export interface RouteInput<P, Q, B> {
  readonly req: Request;
  readonly res: Response;
  readonly params: P;
  readonly query: Q;
  readonly body: B;
}

export interface RouteSpec<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  readonly method: Method;
  /** Express path, e.g. `/api/projects/:projectId`. */
  readonly path: string;
  readonly operationId: string;
  readonly summary: string;
  readonly description?: string;
  readonly tag: string;
  readonly params?: P;
  readonly query?: Q;
  readonly body?: B;
  /** Whether the body is optional (default: required when `body` is given). */
  readonly bodyOptional?: boolean;
  readonly answers: Readonly<Record<number, AnswerSpec>>;
  /** Checks before any input is validated; each calls `next()` or passes an error. */
  readonly guards?: readonly RequestHandler[];
  /** A mutation never forwarded to SERVICE_WRITE_UPSTREAM: `POST /api/internal/bus`, whose guard judges the TCP peer. */
  readonly localOnly?: boolean;
  readonly handler: (input: RouteInput<z.output<P>, z.output<Q>, z.output<B>>) => unknown;
}

/** A request matched against the declared routes: one decision shared by token check, write proxy, log and dispatcher. */
export interface RouteMatch {
  /** The declared route (for HEAD, the GET route that answers it). */
  readonly spec: RouteSpec;
  /** Path parameters, percent-decoded as find-my-way decodes them; never empty. */
  readonly params: Readonly<Record<string, string>>;
}

/**
 * The path of a match in one spelling: the template with parameters percent-encoded, dot-only
 * ones too, so no proxy removes a dot-segment (RFC 3986 §5.2.4) and turns it into another route.
 */
export function canonicalPath(m: RouteMatch): string {
  return m.spec.path.replace(/:([A-Za-z_$][\w$]*)/g, (_, name: string) => {
    const segment = encodeURIComponent(m.params[name] ?? '');
    return segment === '.' || segment === '..' ? segment.replace(/\./g, '%2E') : segment;
  });
}

/** The methods routes are declared with (GET routes also answer HEAD), in `Allow` order. */
export const SERVED_METHODS: readonly HTTPMethod[] = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE'];
