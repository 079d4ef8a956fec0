/**
 * Workspace state (api-decisions.md, "Service routes with partial shape", Workspace state;
 * spec: partial-shape table): an opaque JSON blob per workspace id with a revision, and
 * reports of corrupt blobs kept for inspection.
 */
import { z } from 'zod';
import { WORKSPACE_REPORTS_KEPT } from '../../console/index.js';
import { checkId } from '../../engine/ids.js';
import { HttpError, StaleRevisionError } from '../errors.js';
import type { Api } from '../route.js';
import { ErrorBody, PathId, QueryInt } from '../schemas.js';
import { JsonValue, WorkspaceReport, WorkspaceState } from './console-schemas.js';
import type { AppDeps } from './deps.js';

const e400 = { description: 'Malformed workspace id.', schema: ErrorBody };
const e422 = { description: 'Validation detail.', schema: ErrorBody };

export function workspaceRoutes(api: Api, { console: state, config }: AppDeps): void {
  const Params = z.object({ wid: PathId('Workspace id') });

  api.route({
    method: 'get',
    path: '/api/workspace-state/:wid',
    operationId: 'getWorkspaceState',
    summary: 'Get a workspace state',
    tag: 'Console',
    params: Params,
    answers: {
      200: { description: 'The stored blob and its revision.', schema: WorkspaceState },
      400: e400,
      404: { description: '`no workspace state <wid>`: never written; create it with a PUT with `revision` 0.', schema: ErrorBody },
    },
    handler: async ({ res, params }) => {
      const wid = checkId('wid', params.wid);
      const record = await state.workspace.get(wid);
      if (!record) throw new HttpError('workspace_not_found', `no workspace state ${wid}`);
      res.json(record);
    },
  });

  api.route({
    method: 'put',
    path: '/api/workspace-state/:wid',
    operationId: 'putWorkspaceState',
    summary: 'Store a workspace state',
    description:
      'Stores `state` when `revision` equals the current revision (0 for a workspace never written); the stored revision is then one more. Any other `revision` is a 409 whose body carries the current `revision`; nothing is written.',
    tag: 'Console',
    params: Params,
    body: z.object({
      revision: z.number().int().min(0).meta({ description: 'The revision the caller last read (0 for a new workspace).' }),
      state: JsonValue('The workspace blob: any JSON value, stored as given.'),
    }),
    answers: {
      200: { description: 'Stored.', schema: WorkspaceState },
      400: e400,
      409: {
        description: 'Stale revision: `detail` says so and `revision` is the current one.',
        schema: z.object({ detail: z.string(), code: z.literal('stale_revision'), revision: z.number().int() }).meta({ id: 'StaleRevision' }),
      },
      422: e422,
    },
    handler: async ({ res, params, body }) => {
      const wid = checkId('wid', params.wid);
      const out = await state.workspace.put(wid, body.revision, body.state);
      if (!out.ok) throw new StaleRevisionError(`stale revision ${body.revision} for workspace ${wid}: the current revision is ${out.currentRevision}`, out.currentRevision);
      res.json(out.record);
    },
  });

  api.route({
    method: 'post',
    path: '/api/workspace-state/:wid/report',
    operationId: 'reportWorkspaceState',
    summary: 'Report a corrupt workspace blob',
    description: `Stores \`blob\` (any JSON value: a corrupt blob is best sent as a string) for later inspection; the newest ${WORKSPACE_REPORTS_KEPT} reports per workspace are kept. A blob whose JSON text is larger than CONSOLE_WORKSPACE_REPORT_MAX_BYTES (now ${config.consoleState.workspaceReportMaxBytes}) is a 413. The stored workspace state is not changed.`,
    tag: 'Console',
    params: Params,
    body: z.object({
      blob: JsonValue('The corrupt blob.'),
      reason: z.string().max(2000).optional().meta({ description: 'Why the console found it corrupt.' }),
    }),
    answers: {
      202: {
        description: 'Stored.',
        schema: z.object({ ok: z.literal(true), wid: z.string(), reportId: z.number().int(), bytes: z.number().int() }),
      },
      400: e400,
      413: { description: 'The blob is larger than the bound.', schema: ErrorBody },
      422: e422,
    },
    handler: async ({ res, params, body }) => {
      const wid = checkId('wid', params.wid);
      const out = await state.workspace.report(wid, body.blob, body.reason ?? null);
      if (!out.ok) throw new HttpError('report_too_large', `workspace report too large: ${out.bytes} bytes (limit ${out.maxBytes})`);
      res.status(202).json({ ok: true, wid, reportId: out.reportId, bytes: out.bytes });
    },
  });

  api.route({
    method: 'get',
    path: '/api/workspace-state/:wid/reports',
    operationId: 'listWorkspaceReports',
    summary: 'List the corrupt-blob reports of a workspace',
    description: 'Newest first; an id with no report answers an empty array.',
    tag: 'Console',
    params: Params,
    query: z.object({ limit: QueryInt(1, WORKSPACE_REPORTS_KEPT, WORKSPACE_REPORTS_KEPT) }),
    answers: { 200: { description: 'Reports.', schema: z.array(WorkspaceReport) }, 400: e400, 422: e422 },
    handler: async ({ res, params, query }) => {
      res.json(await state.workspace.reports(checkId('wid', params.wid), query.limit));
    },
  });
}
