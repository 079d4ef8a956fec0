/**
 * Generation jobs (api-decisions.md, "Service routes with partial shape": Jobs).
 */
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { EngineEvent, ErrorBody, Job, JobEventsQuery, JobsQuery, PathId } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { EVENT_LIST_ORDER, filterOf, sendEventList } from './events.js';
import { UnknownJobError } from '../../supervisor/index.js';

export function jobRoutes(api: Api, { supervisor, bus, cancels }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/jobs',
    operationId: 'listJobs',
    summary: 'List generation jobs',
    description: 'Newest first; running jobs carry live line counts. States: `running`, `exited ok`, `exited failed`, `lost` (found running after the service itself died).',
    tag: 'Generation',
    query: JobsQuery,
    answers: { 200: { description: 'Jobs.', schema: z.array(Job) }, 422: { description: 'Bad filter.', schema: ErrorBody } },
    handler: async ({ res, query }) => {
      res.json(await supervisor.list(query.limit, query.state));
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
    description: `The job’s events (issue 14, item 2): its spawn, every output line, leftovers, its exit or its loss, and decisions on its proposal; the same as \`GET /api/events?proposalId=<id>\`, with the same filters, cursor and limit. ${EVENT_LIST_ORDER} Live: \`GET /api/events/stream?proposalId=<id>\`.`,
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
