/**
 * Generation jobs (api-decisions.md, "Service routes with partial shape": Jobs).
 */
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { EngineEvent, encodeJobsCursor, ErrorBody, Job, JobEventsQuery, JobsQuery, PathId } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { EVENT_LIST_ORDER, filterOf, sendEventList } from './events.js';
import { UnknownJobError } from '../../supervisor/index.js';

export function jobRoutes(api: Api, { supervisor, bus, cancels }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/jobs',
    operationId: 'listJobs',
    summary: 'List generation jobs',
    description:
      'The job history (the state database keeps CONSOLE_JOB_HISTORY finished jobs), newest first (by start time, then id); running jobs carry live line counts. States: `running`, `exited ok`, `exited failed`, `lost` (found running after the service itself died). Filters by state, project and start time; one page of `limit` jobs, and when there are more, `X-Next-Cursor` (and `Link: <…>; rel="next"`) for the next: pages are keyed on the last job shown, so each costs the same however deep, and jobs started meanwhile shift nothing.',
    tag: 'Generation',
    query: JobsQuery,
    answers: {
      200: {
        description: 'One page of jobs.',
        schema: z.array(Job),
        optionalHeaders: {
          'X-Next-Cursor': 'Only when more jobs match: pass it as `cursor`, with the same filters, for the next page.',
          Link: 'Only when more jobs match: `<the next page’s path and query>; rel="next"` (RFC 8288).',
        },
      },
      400: { description: 'Malformed `projectId` (`invalid_id`).', schema: ErrorBody },
      422: { description: 'Unknown state, a time that is not RFC 3339, a cursor this list did not give, or limit outside 1..500.', schema: ErrorBody },
    },
    handler: async ({ req, res, query }) => {
      if (query.projectId !== undefined) checkId('projectId', query.projectId);
      // One more than the page: whether a next page exists, without a count.
      const found = await supervisor.search({
        states: query.state,
        ...(query.projectId !== undefined ? { projectId: query.projectId } : {}),
        ...(query.from !== undefined ? { from: query.from } : {}),
        ...(query.to !== undefined ? { to: query.to } : {}),
        ...(query.cursor !== undefined ? { after: query.cursor } : {}),
        limit: query.limit + 1,
      });
      const page = found.slice(0, query.limit);
      const last = page.at(-1);
      if (found.length > query.limit && last !== undefined) {
        const cursor = encodeJobsCursor(last);
        const params = new URLSearchParams(req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '');
        params.set('cursor', cursor);
        res.setHeader('X-Next-Cursor', cursor);
        res.setHeader('Link', `</api/jobs?${params.toString()}>; rel="next"`);
      }
      res.json(page);
    },
  });

  const Params = z.object({ proposalId: PathId('Generation proposal id (`gen_…`)') });
  api.route({
    method: 'get',
    path: '/api/jobs/:proposalId',
    operationId: 'getJob',
    summary: 'Get a generation job',
    tag: 'Generation',
    params: Params,
    answers: {
      200: { description: 'The job.', schema: Job },
      400: { description: 'Malformed id.', schema: ErrorBody },
      404: { description: 'Unknown job.', schema: ErrorBody },
    },
    handler: async ({ res, params }) => {
      const id = checkId('proposal_id', params.proposalId);
      const job = await supervisor.get(id);
      if (!job) throw new UnknownJobError(id);
      res.json(job);
    },
  });

  api.route({
    method: 'get',
    path: '/api/jobs/:proposalId/events',
    operationId: 'listJobEvents',
    summary: 'List one generation job’s events',
    description: `The job’s events: its spawn, every output line, leftovers, its exit or its loss, and decisions on its proposal; the same as \`GET /api/events?proposalId=<id>\`, with the same filters, cursor and limit. ${EVENT_LIST_ORDER} Live: \`GET /api/events/stream?proposalId=<id>\`.`,
    tag: 'Generation',
    params: Params,
    query: JobEventsQuery,
    answers: {
      200: { description: 'The job’s events (empty once retention dropped them).', schema: z.array(EngineEvent) },
      400: { description: 'Malformed id.', schema: ErrorBody },
      404: { description: 'Unknown job.', schema: ErrorBody },
      422: { description: 'Unknown severity, bad sinceId, or limit outside 1..500.', schema: ErrorBody },
    },
    handler: async ({ res, params, query }) => {
      const id = checkId('proposal_id', params.proposalId);
      if (!(await supervisor.get(id))) throw new UnknownJobError(id);
      await sendEventList(bus, res, { ...filterOf(query), proposalId: id }, query);
    },
  });

  api.route({
    method: 'post',
    path: '/api/jobs/:proposalId/cancel',
    operationId: 'cancelJob',
    summary: 'Cancel a running generation job',
    description:
      'SIGTERM to the job’s process group and tree, SIGKILL after the configured grace period. The exit is published as usual (a `failure` with rc 128 + signal number). In cluster mode any instance takes the cancel: it is routed to the instance that runs the job, and answered once that instance has signalled the process group.',
    tag: 'Generation',
    params: Params,
    answers: {
      202: { description: 'Cancellation requested; the job is still running until its exit event.', schema: Job },
      400: { description: 'Malformed id.', schema: ErrorBody },
      404: { description: 'Unknown job.', schema: ErrorBody },
      409: { description: 'The job is not running.', schema: ErrorBody },
      504: { description: 'Cluster mode: the instance that runs the job did not acknowledge the cancel within 5 s (`owner_not_acknowledged`).', schema: ErrorBody },
    },
    handler: async ({ res, params }) => {
      res.status(202).json(await cancels.cancel(checkId('proposal_id', params.proposalId)));
    },
  });
}
