/**
 * Takes and lineage of a beat (spec: Read routes, rules 5-7).
 */
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { ErrorBody, Lineage, MissingCanonicalField, NotModified, PathId, QueryId, STORE_FILE_422, StoreReadTimeout, Take } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { sendAnswer } from './send.js';

const e400 = { description: 'Malformed identifier (detail names the parameter).', schema: ErrorBody };
const e410 = { description: 'Legacy project: `legacy project format: <reason>`.', schema: ErrorBody };
const e422 = {
  description: `A canonical field is missing (MissingCanonicalField detail), or \`projectId\` is absent (validation detail). ${STORE_FILE_422}`,
  schema: z.union([MissingCanonicalField, ErrorBody]),
};

export function beatRoutes(api: Api, { store }: AppDeps): void {
  const BeatParams = z.object({ beatId: PathId('Beat id') });

  api.route({
    method: 'get',
    path: '/api/beats/:beatId/takes',
    operationId: 'listTakes',
    summary: 'List the takes of a beat',
    description: 'Takes of the beat’s shots, in shot order then oldest first, with the recorded console state. An unknown project or beat answers an empty array.',
    tag: 'Engine',
    params: BeatParams,
    query: z.object({ projectId: QueryId('Project id (alias project_id).') }),
    answers: { 200: { description: 'Takes.', schema: z.array(Take) }, 304: NotModified, 400: e400, 410: e410, 422: e422, 503: StoreReadTimeout },
    handler: ({ req, res, params, query }) => {
      const beatId = checkId('beat_id', params.beatId);
      const projectId = checkId('projectId', query.projectId);
      return sendAnswer(req, res, store.query(projectId, { kind: 'takes', beatId }));
    },
  });

  api.route({
    method: 'get',
    path: '/api/beats/:beatId/lineage',
    operationId: 'getLineage',
    summary: 'Get the lineage of a beat or take',
    description: 'Rooted at the beat; with `takeId`, only that take’s chain of `parent_take_id` ancestors (no siblings), with the beat and shot nodes above them.',
    tag: 'Engine',
    params: BeatParams,
    query: z.object({
      projectId: QueryId('Project id (alias project_id).'),
      takeId: QueryId('Root the lineage at this take (alias take_id).').optional(),
    }),
    answers: {
      200: { description: 'The lineage graph.', schema: Lineage },
      304: NotModified,
      400: e400,
      404: { description: '`no lineage for beat <beat_id>`.', schema: ErrorBody },
      410: e410,
      422: e422,
      503: StoreReadTimeout,
    },
    handler: ({ req, res, params, query }) => {
      const beatId = checkId('beat_id', params.beatId);
      const projectId = checkId('projectId', query.projectId);
      const takeId = query.takeId === undefined ? null : checkId('takeId', query.takeId);
      return sendAnswer(req, res, store.query(projectId, { kind: 'lineage', beatId, takeId }));
    },
  });
}
