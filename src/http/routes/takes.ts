/**
 * Take actions (spec: "Take actions", Events rule 5; api-decisions.md, "Mutations and
 * lifecycle routes").
 */
import { z } from 'zod';
import { TAKE_SCOPE } from '../../console/index.js';
import { checkId } from '../../engine/ids.js';
import type { Api } from '../route.js';
import { BodyId, ErrorBody, MissingCanonicalField, PathId, Severity, STORE_FILE_422, StoreReadTimeout } from '../schemas.js';
import { Extra, Scope, TakeStateSchema } from './console-schemas.js';
import type { AppDeps } from './deps.js';

export function takeRoutes(api: Api, { console: state }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/takes/:takeId/action',
    operationId: 'takeAction',
    summary: 'Record a take action',
    description:
      'Records the action and emits `Take <action with underscores as spaces>: <take_id>` in `scope` (default `engine`), payload take_id, action and the `extra` members. Severity: `marked_primary` success, `circled_toggled`, `rejected` and any other action info; `severity` overrides it. ' +
      'State: `marked_primary` makes the take its shot’s only primary (the shot is read from the take file), `circled_toggled` flips `circled`, `rejected` sets `rejected`, other actions change nothing; the takes and lineage routes show it. ' +
      'A take whose file `projects/<projectId>/takes/<take_id>.json` does not exist raises the `take_id_not_on_disk` fallback: the action is recorded, its event has severity `fallback` (the only event), the state is unchanged, and the answer is still 200 with `onDisk` false. ' +
      'A take file that cannot be used at all (not a regular file, a link out of its project, larger than CONSOLE_STORE_FILE_MAX_BYTES) is a 422 naming it, and nothing is recorded; one whose contents are not a take (invalid JSON, too deep) is on disk without a shot: only `marked_primary` is then a 422.',
    tag: 'Takes',
    params: z.object({ takeId: PathId('Take id') }),
    body: z.object({
      projectId: BodyId('projectId').meta({ description: 'Project of the take (alias project_id).' }),
      action: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'must be an action name (letters, digits, ".", "_", "-")')
        .meta({ description: '`marked_primary`, `circled_toggled`, `rejected`, or any other action name (reported as info).' }),
      severity: Severity.optional().meta({ description: 'Overrides the severity of the table (not the `fallback` of a take not on disk).' }),
      scope: Scope.optional().meta({ description: 'Scope of the event, default `engine`.' }),
      extra: Extra.optional(),
    }),
    answers: {
      200: {
        description: 'Recorded.',
        schema: z
          .object({
            ok: z.literal(true),
            takeId: z.string(),
            action: z.string(),
            severity: Severity,
            onDisk: z.boolean(),
            state: TakeStateSchema.meta({ description: 'The take’s recorded state after this action, committed with it (another action may have followed it since).' }),
            eventId: z.string().regex(/^\d+$/).meta({ description: 'The id of the action’s event: the take’s actions replayed in event-id order give its recorded state.' }),
          })
          .meta({ id: 'TakeActionAnswer' }),
      },
      400: { description: 'Malformed take id.', schema: ErrorBody },
      422: {
        description: `Validation detail; or MissingCanonicalField when the take file cannot be used, or when \`marked_primary\` names a take file without a readable \`shot_id\`. ${STORE_FILE_422}`,
        schema: z.union([ErrorBody, MissingCanonicalField]),
      },
      503: StoreReadTimeout,
    },
    handler: async ({ res, params, body }) => {
      const takeId = checkId('take_id', params.takeId);
      const r = await state.takes.act({
        projectId: body.projectId,
        takeId,
        action: body.action,
        scope: body.scope ?? TAKE_SCOPE,
        ...(body.severity ? { severity: body.severity } : {}),
        ...(body.extra ? { extra: body.extra } : {}),
      });
      res.json({ ok: true, takeId, action: r.action, severity: r.severity, onDisk: r.onDisk, state: r.state, eventId: r.eventId });
    },
  });
}
