/**
 * DNS-rebinding defence: a page can resolve its own name to 127.0.0.1, and CORS then sees its own
 * origin. Bound to loopback (or with CONSOLE_ALLOWED_HOSTS set), only loopback or allowed `Host`
 * values are served; others get 421 before anything runs.
 */
import net from 'node:net';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler } from 'express';
import { canonicalHost, type Config } from '../config/config.js';
import { isLoopbackHost } from './auth.js';
import { HttpError } from './errors.js';
import { isLoopback } from './routes/internal-bus.js';

/** How many served Host values the middleware remembers. */
const SERVED_MEMO = 64;

/** Which `Host` values an instance serves. */
export interface HostPolicy {
  /** Whether the check runs: bound to a loopback address, or CONSOLE_ALLOWED_HOSTS set. */
  readonly enforced: boolean;
  /** CONSOLE_ALLOWED_HOSTS in canonical form (config.ts, `canonicalHost`); loopback names are always served. */
  readonly allowed: readonly string[];
}

/** The policy of a configuration: its listen address (`HOST`) and CONSOLE_ALLOWED_HOSTS. */
export function hostPolicy(config: Pick<Config, 'host' | 'allowedHosts'>): HostPolicy {
  return { enforced: isLoopbackHost(config.host) || config.allowedHosts.length > 0, allowed: config.allowedHosts };
}

/**
 * Whether a `Host` is served: loopback with any port, or an allowed host (with or without port),
 * compared in browser form, trailing dot ignored. Anything but host[:port], or none, is not served.
 */
export function isServedHost(value: string | undefined, allowed: readonly string[]): boolean {
  if (value === undefined) return false;
  const h = canonicalHost(value.trim());
  if (h === null) return false;
  if (isLoopbackName(h.host)) return true;
  return allowed.includes(h.host) || (h.port !== null && allowed.includes(`${h.host}:${h.port}`));
}

/** `localhost`, an address of 127.0.0.0/8, or `[::1]` (also `[::ffff:127.x.y.z]`). */
function isLoopbackName(host: string): boolean {
  if (host === 'localhost') return true;
  const ip = host.startsWith('[') ? host.slice(1, -1) : host;
  return net.isIP(ip) !== 0 && isLoopback(ip);
}

/**
 * The authority of an absolute-form request target (`POST http://name/api/… HTTP/1.1`), which
 * a server takes over Host (RFC 9112, 3.2.2); undefined for the usual origin form (`/api/…`).
 */
function targetAuthority(req: IncomingMessage): string | undefined {
  const target = req.url ?? '';
  if (target.startsWith('/')) return undefined;
  try {
    const u = new URL(target);
    return u.host === '' ? undefined : u.host;
  } catch {
    return undefined;
  }
}

/**
 * The middleware, or null when not enforced; register it early (after the request log, before CORS).
 * @throws HttpError `host_not_allowed` (421), through `next`.
 */
export function hostCheck(policy: HostPolicy): RequestHandler | null {
  if (!policy.enforced) return null;
  // Served Host values are remembered (bounded); refused ones, which anyone can vary, are parsed each time.
  const served = new Set<string>();
  const isServed = (value: string | undefined): boolean => {
    if (value !== undefined && served.has(value)) return true;
    const ok = isServedHost(value, policy.allowed);
    if (ok && served.size < SERVED_MEMO) served.add(value as string);
    return ok;
  };
  return (req, _res, next) => {
    const host = req.headers.host;
    const authority = targetAuthority(req);
    if (isServed(host) && (authority === undefined || isServed(authority))) {
      next();
      return;
    }
    const named =
      authority !== undefined && isServed(host) ? `the request target's host ${JSON.stringify(authority)}` : host === undefined ? 'a request without a Host header' : `Host ${JSON.stringify(host)}`;
    next(
      new HttpError(
        'host_not_allowed',
        `${named} is not served here: this service answers only requests for loopback names (localhost, 127.0.0.1, [::1], any port) and the hosts listed in CONSOLE_ALLOWED_HOSTS (a defence against DNS rebinding); to serve this host, add it to CONSOLE_ALLOWED_HOSTS`,
      ),
    );
  };
}
