/**
 * Clicks (api-decisions.md, "Service routes with partial shape", Clicks): a persisted ring
 * buffer per project. Clicks emit no event.
 */
import { z } from 'zod';
import { unknownProject } from '../../engine/errors.js';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { BodyId, ErrorBody, QueryId, QueryInt } from '../schemas.js';
import { Click } from './console-schemas.js';
import type { AppDeps } from './deps.js';

export function clickRoutes(api: Api, { console: state, config, store }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/clicks',
    operationId: 'appendClick',
    summary: 'Append a click',
    description: `Stores the click, committed before the answer. Each project keeps its newest clicks (CONSOLE_CLICKS_PER_PROJECT, now ${config.consoleState.clicksPerProject}), and all projects together keep the newest CONSOLE_CLICKS_MAX_TOTAL (now ${config.consoleState.clicksMaxTotal}); older ones are dropped in the same transaction, oldest first. \`projectId\` must name a project in the store (a folder under \`projects/\` with \`project.json\` or \`project.yaml\`, legacy ones included): otherwise 404, nothing stored. No event is emitted.`,
    tag: 'Console',
    body: z.object({
      projectId: BodyId('projectId').meta({ description: 'Project id (alias project_id).' }),
      target: z.string().min(1).max(512).meta({ description: 'What was clicked, e.g. a UI element name.' }),
      x: z.number().optional(),
      y: z.number().optional(),
      meta: z.record(z.string(), z.unknown()).optional().meta({ description: 'Any further members, stored as given.' }),
    }),
    answers: {
      201: { description: 'The stored click.', schema: Click },
      404: { description: 'No project of that id in the store: `unknown project <id>`.', schema: ErrorBody },
      422: { description: 'Validation detail.', schema: ErrorBody },
    },
    handler: async ({ res, body }) => {
      // Clicks are bounded per project: a click for any made-up id would be a new ring.
      if (!(await store.hasProject(body.projectId))) throw unknownProject(body.projectId);
      res.status(201).json(await state.clicks.append(body));
    },
  });

  api.route({
    method: 'get',
    path: '/api/clicks',
    operationId: 'listClicks',
    summary: 'List recent clicks',
    description:
      'Newest first, of one project or (without `projectId`) of all. Lists what is stored: a project id that names no project answers its stored clicks (none, unless the project was removed since).',
    tag: 'Console',
    query: z.object({
      projectId: QueryId('Project id (alias project_id).').optional(),
      limit: QueryInt(1, 10_000, 100).meta({ description: '1..10000, default 100.' }),
    }),
    answers: {
      200: { description: 'Clicks, newest first.', schema: z.array(Click) },
      400: { description: 'Malformed project id.', schema: ErrorBody },
      422: { description: 'Validation detail.', schema: ErrorBody },
    },
    handler: async ({ res, query }) => {
      const projectId = query.projectId === undefined ? null : checkId('projectId', query.projectId);
      res.json(await state.clicks.list(projectId, query.limit));
    },
  });
}
