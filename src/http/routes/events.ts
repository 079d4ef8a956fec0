/**
 * `GET /api/events` and the Server-Sent Events stream (spec: Read routes; api-decisions.md,
 * Events and "Event stream").
 */
import { z } from 'zod';
import type { Api } from '../route.js';
import { EngineEvent, ErrorBody, EventsQuery, StreamQuery } from '../schemas.js';
import type { AppDeps } from './deps.js';

export function eventRoutes(api: Api, { bus, sse }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/events',
    operationId: 'listEvents',
    summary: 'List bus events',
    description:
      'Ascending id order. Without `sinceId`: the newest `limit` events passing the filters; with it, the first `limit` events after it. Events are kept in the state database up to the configured retention.',
    tag: 'Events',
    query: EventsQuery,
    answers: {
      200: { description: 'Events.', schema: z.array(EngineEvent) },
      422: { description: 'Unknown severity, bad sinceId, or limit outside 1..500.', schema: ErrorBody },
    },
    handler: ({ res, query }) => {
      const filter = { severities: query.severities, scopePrefix: query.scopePrefix ?? null };
      const rows =
        query.sinceId === undefined
          ? bus.readNewest(query.limit, filter)
          : bus.readAfter(Number(query.sinceId), query.limit, filter);
      // Stored rows already hold each event's JSON: join them instead of re-serialising.
      let body = '[';
      for (let i = 0; i < rows.length; i++) body += (i === 0 ? '' : ',') + (rows[i] as { data: string }).data;
      res.type('application/json').send(`${body}]`);
    },
  });

  api.route({
    method: 'get',
    path: '/api/events/stream',
    operationId: 'streamEvents',
    summary: 'Stream bus events (Server-Sent Events)',
    description:
      'Frames `id: <event id>` + `data: <event JSON>`, no `event:` line; a `retry:` line first and a `: ping` comment at least every 15 s. Resume with the `Last-Event-ID` header (or `sinceId`): every stored event after it is replayed in order, then live events follow with no gap and no duplicate. A client whose unsent data passes the configured bound is disconnected and may resume. `HEAD` answers the same status and headers at once, with no body, and opens no stream (it is not counted as a subscriber).',
    tag: 'Events',
    query: StreamQuery,
    answers: {
      200: { description: 'An endless `text/event-stream`.', contentType: 'text/event-stream', schema: z.string() },
      422: { description: 'Unknown severity or bad sinceId.', schema: ErrorBody },
    },
    handler: ({ req, res, query }) => {
      const header = req.get('Last-Event-ID')?.trim();
      // The header wins: a reconnecting EventSource keeps its original URL but sends the newest id.
      const resume = header && /^\d{1,15}$/.test(header) ? header : query.sinceId;
      sse.open(res, { severities: query.severities, scopePrefix: query.scopePrefix ?? null }, resume === undefined ? null : Number(resume));
    },
  });
}
