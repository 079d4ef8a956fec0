/**
 * `POST /api/internal/bus` (api-decisions.md §Service routes with partial shape): local callers
 * publish a bus event. The caller is judged by the socket's peer address: forwarded headers are
 * client-written, and behind a proxy the peer is the proxy.
 */
import net from 'node:net';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import { HttpError } from '../errors.js';
import type { Api } from '../route.js';
import { ErrorBody, Severity } from '../schemas.js';
import { Scope } from './console-schemas.js';
import type { AppDeps } from './deps.js';

export const INTERNAL_BUS_PATH = '/api/internal/bus';

const LOOPBACK = new net.BlockList();
LOOPBACK.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK.addAddress('::1', 'ipv6');
LOOPBACK.addSubnet('::ffff:127.0.0.0', 104, 'ipv6');

/** True for 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104. */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const family = net.isIPv6(address) ? 'ipv6' : net.isIPv4(address) ? 'ipv4' : null;
  return family !== null && LOOPBACK.check(address, family);
}

/**
 * The header a proxy adds to a request it passes on (RFC 7239 `Forwarded`, `Via`, the
 * `X-Forwarded-*` family, `X-Real-IP`), or undefined when there is none. This service's own
 * write proxy adds `Via`, `Forwarded` and `X-Forwarded-For`.
 */
export function proxyHeaderOf(headers: Readonly<Record<string, unknown>>): string | undefined {
  for (const name in headers) {
    if (name === 'forwarded' || name === 'via' || name === 'x-real-ip' || name.startsWith('x-forwarded-')) return name;
  }
  return undefined;
}

/**
 * 403 unless the TCP peer is a loopback address and the request did not come through a proxy
 * (a proxy on this machine would make any caller look local); runs before the body is
 * validated.
 */
const loopbackOnly: RequestHandler = (req, _res, next) => {
  const peer = req.socket.remoteAddress;
  if (!isLoopback(peer)) {
    next(new HttpError('not_loopback', `${INTERNAL_BUS_PATH} accepts loopback callers only (this request came from ${peer ?? 'an unknown address'})`));
    return;
  }
  const proxied = proxyHeaderOf(req.headers);
  if (proxied !== undefined) {
    next(new HttpError('not_loopback', `${INTERNAL_BUS_PATH} accepts direct loopback callers only (this request came through a proxy: it carries ${proxied})`));
    return;
  }
  next();
};

/** An event without `id` and `ts` (the bus assigns them). */
export const InternalBusEvent = z
  .strictObject({
    severity: Severity,
    scope: Scope.meta({ description: 'Slash-separated channel, e.g. `engine/render` (the rule of every caller-supplied scope).' }),
    summary: z.string().min(1).max(2000),
    detail: z.string().max(65_536).nullable().optional(),
    payload: z.record(z.string(), z.unknown()).optional().meta({ description: 'Default `{}`.' }),
  })
  .meta({ id: 'InternalBusEvent', description: 'An event without `id` and `ts`; other members are refused (422).' });

export function internalBusRoutes(api: Api, { bus }: AppDeps): void {
  api.route({
    method: 'post',
    path: INTERNAL_BUS_PATH,
    guards: [loopbackOnly],
    // Forwarded, it would reach the upstream from this instance's address (write-proxy.ts).
    localOnly: true,
    operationId: 'publishInternalEvent',
    summary: 'Publish a bus event (loopback callers only)',
    description:
      'Accepted only when the TCP peer is a loopback address (127.0.0.0/8, ::1, ::ffff:127.0.0.0/104) and the request did not come through a proxy (no `Forwarded`, `Via`, `X-Forwarded-*` or `X-Real-IP` header): forwarded headers never make a caller local. Always served by the instance that receives it, also with SERVICE_WRITE_UPSTREAM set. The event is stored before the answer.',
    tag: 'Events',
    body: InternalBusEvent,
    answers: {
      202: { description: 'Stored; `id` is the event id.', schema: z.object({ id: z.string() }) },
      403: {
        description: 'The caller is not on the loopback interface, or the request came through a proxy (`not_loopback`); or a browser page of another site sent it (`cross_site_request`).',
        schema: ErrorBody,
      },
      422: { description: 'Invalid event.', schema: ErrorBody },
    },
    handler: async ({ res, body }) => {
      // Stored now: `GET /api/events` returns it as soon as the caller has the id.
      const event = await bus.publishStored(body);
      res.status(202).json({ id: event.id });
    },
  });
}
