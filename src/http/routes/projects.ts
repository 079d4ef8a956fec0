/**
 * Read routes of projects, episodes, scenes and beats (spec: Read routes, rules 1-4, 7).
 */
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { ErrorBody, Beat, Episode, MissingCanonicalField, NotModified, PathId, Project, Scene, STORE_FILE_422, StoreReadTimeout } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { sendAnswer, sendCached } from './send.js';

const e400 = { description: 'Malformed identifier (detail names the parameter).', schema: ErrorBody };
const e410 = { description: 'Legacy project: `legacy project format: <reason>`.', schema: ErrorBody };
const e422 = { description: `A canonical field is missing (MissingCanonicalField detail). ${STORE_FILE_422}`, schema: MissingCanonicalField };
const e503 = StoreReadTimeout;

export function projectRoutes(api: Api, { store }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/projects',
    operationId: 'listProjects',
    summary: 'List projects',
    description:
      'Format-2 projects by id. Legacy projects, and ones missing a canonical field or whose project.json cannot be used (a pipe, a link out of the store, too large, too deep, not JSON), are left out; each is reported once by a `warning` event in scope `engine/projects` (which never quotes the file). Folders of `projects/` only: a link or a pipe there is no project.',
    tag: 'Engine',
    answers: { 200: { description: 'Projects.', schema: z.array(Project) }, 304: NotModified, 503: e503 },
    handler: async ({ req, res }) => sendCached(req, res, await store.listProjects()),
  });

  const ProjectParams = z.object({ projectId: PathId('Project id') });
  api.route({
    method: 'get',
    path: '/api/projects/:projectId',
    operationId: 'getProject',
    summary: 'Get a project',
    tag: 'Engine',
    params: ProjectParams,
    answers: {
      200: { description: 'The project.', schema: Project },
      304: NotModified,
      400: e400,
      404: { description: 'Unknown project: `unknown project <id>`.', schema: ErrorBody },
      410: e410,
      422: e422,
      503: e503,
    },
    handler: async ({ req, res, params }) => sendCached(req, res, await store.getProject(params.projectId)),
  });

  api.route({
    method: 'get',
    path: '/api/projects/:projectId/episodes',
    operationId: 'listEpisodes',
    summary: 'List the episodes of a project',
    description: 'One synthesised episode per distinct episode number across the shot files. An unknown project answers an empty array.',
    tag: 'Engine',
    params: ProjectParams,
    answers: { 200: { description: 'Episodes.', schema: z.array(Episode) }, 304: NotModified, 400: e400, 410: e410, 422: e422, 503: e503 },
    handler: ({ req, res, params }) => {
      const projectId = checkId('project_id', params.projectId);
      return sendAnswer(req, res, store.query(projectId, { kind: 'episodes' }));
    },
  });

  const EpisodeParams = z.object({ projectId: PathId('Project id'), episodeId: PathId('Episode id') });
  api.route({
    method: 'get',
    path: '/api/projects/:projectId/episodes/:episodeId/scenes',
    operationId: 'listScenes',
    summary: 'List the scenes of an episode',
    description: 'Exactly one synthetic scene, `main`, per episode.',
    tag: 'Engine',
    params: EpisodeParams,
    answers: {
      200: { description: 'Scenes.', schema: z.array(Scene) },
      304: NotModified,
      400: e400,
      404: { description: 'Unknown episode.', schema: ErrorBody },
      410: e410,
      422: e422,
      503: e503,
    },
    handler: ({ req, res, params }) => {
      const projectId = checkId('project_id', params.projectId);
      const episodeId = checkId('episode_id', params.episodeId);
      return sendAnswer(req, res, store.query(projectId, { kind: 'scenes', episodeId }));
    },
  });

  api.route({
    method: 'get',
    path: '/api/projects/:projectId/episodes/:episodeId/scenes/:sceneId/beats',
    operationId: 'listBeats',
    summary: 'List the beats of a scene',
    tag: 'Engine',
    params: EpisodeParams.extend({ sceneId: PathId('Scene id') }),
    answers: {
      200: { description: 'Beats in order.', schema: z.array(Beat) },
      304: NotModified,
      400: e400,
      404: { description: 'Unknown episode or scene.', schema: ErrorBody },
      410: e410,
      422: e422,
      503: e503,
    },
    handler: ({ req, res, params }) => {
      const projectId = checkId('project_id', params.projectId);
      const episodeId = checkId('episode_id', params.episodeId);
      const sceneId = checkId('scene_id', params.sceneId);
      return sendAnswer(req, res, store.query(projectId, { kind: 'beats', episodeId, sceneId }));
    },
  });
}
