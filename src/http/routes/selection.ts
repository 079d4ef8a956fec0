/**
 * Selection and recent items (api-decisions.md, "Service routes with partial shape":
 * Selection, Recent).
 */
import { z } from 'zod';
import { RECENT_ITEMS_KEPT, RECENT_PROJECTS_KEPT } from '../../console/index.js';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { ErrorBody, QueryId, QueryInt } from '../schemas.js';
import { RecentEntry, SelectionAnswer, SelectionBody } from './console-schemas.js';
import type { AppDeps } from './deps.js';

const ProjectQuery = z.object({ projectId: QueryId('Project id (alias project_id).') });
const e400 = { description: 'Malformed project id.', schema: ErrorBody };
const e422 = { description: 'Validation detail (e.g. `projectId` absent).', schema: ErrorBody };

export function selectionRoutes(api: Api, { console: state }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/selection',
    operationId: 'getSelection',
    summary: 'Get a project’s selection',
    description: 'The last stored selection; `selection` and `updatedAt` are null when none was stored.',
    tag: 'Console',
    query: ProjectQuery,
    answers: { 200: { description: 'The selection.', schema: SelectionAnswer }, 400: e400, 422: e422 },
    handler: async ({ res, query }) => {
      const projectId = checkId('projectId', query.projectId);
      res.json((await state.selection.get(projectId)) ?? { projectId, selection: null, updatedAt: null });
    },
  });

  api.route({
    method: 'put',
    path: '/api/selection',
    operationId: 'putSelection',
    summary: 'Store a project’s selection',
    description:
      'Replaces the selection. The body is an object: `episodeId`, `sceneId`, `beatId`, `shotId`, `takeId` (ids or null) and any other members, stored as given (top-level snake_case names are stored in camelCase). It also records the project, and the most specific selected item (take, else shot, beat, scene, episode), as recently opened (`GET /api/recent`).',
    tag: 'Console',
    query: ProjectQuery,
    body: SelectionBody,
    answers: { 200: { description: 'Stored.', schema: SelectionAnswer }, 400: e400, 422: e422 },
    handler: async ({ res, query, body }) => {
      const projectId = checkId('projectId', query.projectId);
      res.json(await state.selection.put(projectId, body));
    },
  });

  api.route({
    method: 'get',
    path: '/api/recent',
    operationId: 'listRecent',
    summary: 'Recently opened projects and items',
    description: `Newest first. A project and its most specific selected item become recent when its selection is stored (\`PUT /api/selection\`); opening one again moves it to the front. The newest ${RECENT_PROJECTS_KEPT} projects and ${RECENT_ITEMS_KEPT} items are kept.`,
    tag: 'Console',
    query: z.object({ limit: QueryInt(1, RECENT_ITEMS_KEPT, 20).meta({ description: `1..${RECENT_ITEMS_KEPT}, default 20, per list.` }) }),
    answers: {
      200: {
        description: 'Recent projects and items.',
        schema: z.object({
          projects: z.array(z.object({ projectId: z.string(), openedAt: z.string() })),
          items: z.array(RecentEntry),
        }),
      },
      422: e422,
    },
    handler: async ({ res, query }) => {
      const { projects, items } = await state.selection.recent(query.limit);
      res.json({
        projects: projects.map((p) => ({ projectId: p.projectId, openedAt: p.openedAt })),
        items: items.map((i) => ({ projectId: i.projectId, kind: i.kind, id: i.itemId, openedAt: i.openedAt })),
      });
    },
  });
}
