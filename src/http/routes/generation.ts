/**
 * The generation endpoints (spec: Endpoints, "Generation", rules 1-4).
 */
import type { Response } from 'express';
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import { GENERATION_SCOPE, type GenerationRequest } from '../../supervisor/index.js';
import { HttpError } from '../errors.js';
import { addToRequestLine } from '../request-log.js';
import type { Api } from '../route.js';
import { ErrorBody, GenerationAccepted, GenerationRequestBody, GenerationRequestForProject, PathId } from '../schemas.js';
import type { AppDeps } from './deps.js';

type Body = z.output<typeof GenerationRequestBody>;

const answers = {
  202: {
    description:
      'Accepted: the dispatch tool was started, and the job (`running`), its pending GenerationProposal and its spawn event are stored. Refused by the state database, the job is killed and nothing is stored.',
    schema: GenerationAccepted,
  },
  422: { description: 'Validation detail, or `project path/body mismatch`.', schema: ErrorBody },
  500: { description: 'The dispatch tool file is missing (detail names it); no process was started.', schema: ErrorBody },
  503: {
    description: 'The cap on running jobs is reached; no process was started.',
    schema: ErrorBody,
    headers: { 'Retry-After': 'Seconds to wait before retrying.' },
  },
} as const;

export function generationRoutes(api: Api, { supervisor }: AppDeps): void {
  const launch = async (res: Response, body: Body) => {
    // Accepted and logged, never forwarded (spec: GenerationRequest): on the request's log line.
    addToRequestLine(res, { episode: body.episode ?? null, modality: body.modality });
    const req: GenerationRequest = {
      project: body.project,
      shotId: body.shotId ? body.shotId : null,
      model: body.model ? body.model : null,
      dryRun: body.dryRun,
      episode: body.episode ?? null,
      modality: body.modality,
    };
    // The cap is checked here; the spawn order is paced on the job I/O thread (spawn-pacer.ts).
    const job = await supervisor.start(req);
    addToRequestLine(res, { proposalId: job.proposalId });
    return { proposalId: job.proposalId, pid: job.pid as number, scope: GENERATION_SCOPE };
  };

  api.route({
    method: 'post',
    path: '/api/proposals/generate',
    operationId: 'generate',
    summary: 'Launch a generation job',
    description:
      'Starts `<node> <dispatch tool> --project <project> [--shot <shotId>] [--model <model>] [--dry-run]` without waiting for it; its output lines and exit are published as events in scope `engine/generation`. Episode and modality are accepted and never forwarded.',
    tag: 'Generation',
    body: GenerationRequestBody,
    answers,
    handler: async ({ res, body }) => {
      res.status(202).json(await launch(res, body));
    },
  });

  api.route({
    method: 'post',
    path: '/api/generate/:project',
    operationId: 'generateForProject',
    summary: 'Launch a generation job for a project',
    description: 'As `POST /api/proposals/generate` with the project taken from the path; a different `project` in the body is a 422 `project path/body mismatch`.',
    tag: 'Generation',
    params: z.object({ project: PathId('Project id') }),
    body: GenerationRequestForProject,
    answers: { ...answers, 400: { description: 'Malformed project id in the path.', schema: ErrorBody } },
    handler: async ({ res, params, body }) => {
      const project = checkId('project', params.project);
      if (body.project !== undefined && body.project !== project) throw new HttpError('project_mismatch', 'project path/body mismatch');
      res.status(202).json(await launch(res, { ...body, project }));
    },
  });
}
