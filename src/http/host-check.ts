/**
 * The DNS-rebinding defence (issue 10, item 9). A page on another site can make a browser
 * resolve its own name to 127.0.0.1 and then call this service with that name in `Host`: the
 * browser takes it for the page's own origin, so CORS does not stop it. A service bound to a
 * loopback address therefore answers only requests whose `Host` is a loopback name
 * (`localhost`, 127.0.0.0/8, `[::1]`, any port) or one listed in CONSOLE_ALLOWED_HOSTS; bound
 * to another address, the same rule applies once CONSOLE_ALLOWED_HOSTS is set. Any other Host
 * gets 421 before anything else runs, so it changes nothing.
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
 * Whether a `Host` value is served: a loopback name with any port, or an allowed host (an
 * entry without a port allows every port, one with a port that port only). Compared in the
 * form a browser sends (lower case, IPv4 dotted, IPv6 compressed), a trailing dot ignored.
 * Anything that is not a host with an optional port (userinfo, a path, percent-encoding,
 * blank) is not served; nor is a missing Host.
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
 * The middleware, or null when the policy is not enforced. Register it early (after the
 * request log and timer, before CORS): a refused request reaches nothing else.
 * @throws HttpError `host_not_allowed` (421) with a detail naming the Host and
 *   CONSOLE_ALLOWED_HOSTS, through `next`.
 */
export function hostCheck(policy: HostPolicy): RequestHandler | null {
  if (!policy.enforced) return null;
  // Clients send the same few Host values: those found served are remembered (a bounded set,
  // so refused values, which anyone can vary, cost the parse each time and nothing more).
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
    const named = authority !== undefined && isServed(host) ? `the request target's host ${JSON.stringify(authority)}` : host === undefined ? 'a request without a Host header' : `Host ${JSON.stringify(host)}`;
    next(
      new HttpError(
        'host_not_allowed',
        `${named} is not served here: this service answers only requests for loopback names (localhost, 127.0.0.1, [::1], any port) and the hosts listed in CONSOLE_ALLOWED_HOSTS (a defence against DNS rebinding); to serve this host, add it to CONSOLE_ALLOWED_HOSTS`,
      ),
    );
  };
}
