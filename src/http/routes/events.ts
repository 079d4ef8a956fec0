/** `GET /api/events` and the SSE stream (service-spec.md §Events; api-decisions.md §Events, §Event stream), with the `proposalId` filter. */
import type { Response } from 'express';
import { z } from 'zod';
import type { Bus } from '../../bus/bus.js';
import type { EventFilter, Severity } from '../../bus/event.js';
import { checkId } from '../../engine/ids.js';
import { HttpError } from '../errors.js';
import type { Api } from '../route.js';
import { EngineEvent, ErrorBody, EventsQuery, StreamQuery } from '../schemas.js';
import type { AppDeps } from './deps.js';

/** Seconds a refused stream is told to wait: long enough for a burst of streams to close. */
const STREAM_RETRY_AFTER_S = 5;

/** What `GET /api/events` says about its order and cursor; the job's events route says the same. */
export const EVENT_LIST_ORDER =
  'Ascending id order. Without `sinceId`: the newest `limit` events passing the filters; with it, the first `limit` events after it. Events are kept in the state database up to the configured retention. Only stored events are listed: with the embedded SQLite database, the lines of jobs still queued for its event writer thread (a moment during a burst of job output) come on a later read, after every id listed before, so a `sinceId` cursor never skips one; other events published before the request are waited for.';

/** The filters of a list or stream query; a malformed `proposalId` is a 400 `invalid_id`. */
export function filterOf(query: { severities: Severity[] | null; scopePrefix?: string | undefined; proposalId?: string | undefined }): EventFilter {
  return {
    severities: query.severities,
    scopePrefix: query.scopePrefix ?? null,
    proposalId: query.proposalId === undefined ? null : checkId('proposalId', query.proposalId),
  };
}

/**
 * Answers a page of stored events (spec: Read routes, `/api/events`): the newest `limit`
 * passing `filter`, or with `sinceId` the first `limit` after it; ascending ids.
 */
export async function sendEventList(bus: Bus, res: Response, filter: EventFilter, page: { sinceId?: string | undefined; limit: number }): Promise<void> {
  const rows = await (page.sinceId === undefined ? bus.readNewest(page.limit, filter) : bus.readAfter(Number(page.sinceId), page.limit, filter));
  // Stored rows already hold each event's JSON: join them instead of re-serialising.
  let body = '[';
  for (let i = 0; i < rows.length; i++) body += (i === 0 ? '' : ',') + (rows[i] as { data: string }).data;
  res.type('application/json').send(`${body}]`);
}

export function eventRoutes(api: Api, { bus, sse }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/events',
    operationId: 'listEvents',
    summary: 'List bus events',
    description: EVENT_LIST_ORDER,
    tag: 'Events',
    query: EventsQuery,
    answers: {
      200: { description: 'Events.', schema: z.array(EngineEvent) },
      400: { description: 'Malformed `proposalId` (`invalid_id`).', schema: ErrorBody },
      422: { description: 'Unknown severity, bad sinceId, or limit outside 1..500.', schema: ErrorBody },
    },
    handler: async ({ res, query }) => {
      await sendEventList(bus, res, filterOf(query), query);
    },
  });

  api.route({
    method: 'get',
    path: '/api/events/stream',
    operationId: 'streamEvents',
    summary: 'Stream bus events (Server-Sent Events)',
    description:
      'Frames `id: <event id>` + `data: <event JSON>`, no `event:` line; a `retry:` line first and a `: ping` comment at least every 15 s. Resume with the `Last-Event-ID` header (or `sinceId`): every stored event after it that passes the filters (`proposalId` included) is replayed in order, then live events follow with no gap and no duplicate. A client whose unsent data passes the configured bound is disconnected and may resume. `HEAD` answers the same status and headers at once, with no body, and opens no stream (it is not counted as a subscriber).',
    tag: 'Events',
    query: StreamQuery,
    answers: {
      200: { description: 'An endless `text/event-stream`.', contentType: 'text/event-stream', schema: z.string() },
      400: { description: 'Malformed `proposalId` (`invalid_id`).', schema: ErrorBody },
      422: { description: 'Unknown severity or bad sinceId.', schema: ErrorBody },
      429: {
        description:
          'This remote address has CONSOLE_SSE_MAX_STREAMS_PER_ADDRESS streams open (`too_many_streams_from_address`, with Retry-After); behind a balancer every client has the balancer’s address: raise it, or set 0 for no bound.',
        schema: ErrorBody,
        headers: { 'Retry-After': 'Seconds to wait before trying again.' },
      },
      503: {
        description:
          'CONSOLE_SSE_MAX_STREAMS streams are open (at most half the descriptor limit: `too_many_streams`, with Retry-After); or the service is shutting down (`shutting_down`); or in cluster mode the database cannot be reached for a replay.',
        schema: ErrorBody,
      },
    },
    handler: async ({ req, res, query }) => {
      // Refused before anything is written: the bounds on streams in all and per address.
      if (req.method !== 'HEAD') {
        const refused = sse.admit(req.socket.remoteAddress ?? '');
        // A refused attempt keeps no connection (nor its descriptor) open.
        if (refused !== null) res.setHeader('Connection', 'close');
        if (refused?.kind === 'total') throw new HttpError('too_many_streams', `too many event streams open (${refused.max}); retry later`, { retryAfterSeconds: STREAM_RETRY_AFTER_S });
        if (refused?.kind === 'address') {
          throw new HttpError('too_many_streams_from_address', `too many event streams open from ${refused.address} (${refused.max}); retry later`, { retryAfterSeconds: STREAM_RETRY_AFTER_S });
        }
      }
      const filter = filterOf(query);
      const header = req.get('Last-Event-ID')?.trim();
      // The header wins: a reconnecting EventSource keeps its original URL but sends the newest id.
      const resume = header && /^\d{1,15}$/.test(header) ? header : query.sinceId;
      sse.open(res, filter, resume === undefined ? null : Number(resume), req.socket.remoteAddress ?? '');
    },
  });
}
