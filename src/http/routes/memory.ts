/**
 * `GET /api/memory` (spec: Read routes) and `POST /api/memory/{entry_id}/toggle`
 * (api-decisions.md, "Mutations and lifecycle routes"; spec: Events, memory toggle).
 */
import { z } from 'zod';
import { MEMORY_SCOPE } from '../../console/index.js';
import { checkId } from '../../engine/ids.js';
import { HttpError } from '../errors.js';
import type { Api } from '../route.js';
import { ErrorBody, MemoryEntry, MissingCanonicalField, NotModified, PathId, STORE_FILE_422, StoreReadTimeout } from '../schemas.js';
import { Extra, Scope } from './console-schemas.js';
import type { AppDeps } from './deps.js';
import { sendCached } from './send.js';

export function memoryRoutes(api: Api, { store, console: state }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/memory',
    operationId: 'listMemory',
    summary: 'List memory entries',
    description:
      'Entries of the store’s `memory/` folder by id; `enabled` is the last recorded toggle, else the file’s value (default true). An entry file that cannot be used (not JSON, a canonical field missing or of the wrong type, not a regular file…) is left out of the list, and reported once by a `warning` event in scope `engine/memory` (`memory entry skipped: memory/<file> (<reason>)`, `detail` the remediation, payload `file`, `field`, `project_id`, `fix_cli`), again when its reason changes: one bad file never fails the list.',
    tag: 'Engine',
    answers: {
      200: { description: 'Memory entries (the usable ones).', schema: z.array(MemoryEntry) },
      304: NotModified,
      422: { description: `\`memory/\` itself cannot be listed (a file, a link out of the store). ${STORE_FILE_422}`, schema: MissingCanonicalField },
      503: StoreReadTimeout,
    },
    handler: async ({ req, res }) => sendCached(req, res, await store.listMemory()),
  });

  api.route({
    method: 'post',
    path: '/api/memory/:entryId/toggle',
    operationId: 'toggleMemory',
    summary: 'Enable or disable a memory entry',
    description:
      'Records the toggle (`GET /api/memory` then shows it as `enabled`) and emits `Memory entry enabled: <id>` or `Memory entry disabled: <id>` (info) in `scope` (default `engine/memory`), payload entry_id, on and the `extra` members. An entry with no file `memory/<entry_id>.json` is a 404 and nothing is recorded; one whose file cannot be used (not a regular file, a link out of `memory/`, larger than CONSOLE_STORE_FILE_MAX_BYTES) is a 422 MissingCanonicalField naming it, and nothing is recorded.',
    tag: 'Engine',
    params: z.object({ entryId: PathId('Memory entry id') }),
    body: z.object({
      on: z.boolean(),
      scope: Scope.optional().meta({ description: 'Scope of the event, default `engine/memory`.' }),
      extra: Extra.optional(),
    }),
    answers: {
      200: { description: 'Recorded.', schema: z.object({ ok: z.literal(true), entryId: z.string(), on: z.boolean() }) },
      400: { description: 'Malformed entry id.', schema: ErrorBody },
      404: { description: '`unknown memory entry <entry_id>`.', schema: ErrorBody },
      422: { description: `Validation detail; or MissingCanonicalField for an entry file that cannot be used. ${STORE_FILE_422}`, schema: z.union([ErrorBody, MissingCanonicalField]) },
      503: StoreReadTimeout,
    },
    handler: async ({ res, params, body }) => {
      const entryId = checkId('entry_id', params.entryId);
      if (!(await store.memoryEntryExists(entryId))) throw new HttpError('memory_entry_not_found', `unknown memory entry ${entryId}`);
      await state.memory.toggle({ entryId, on: body.on, scope: body.scope ?? MEMORY_SCOPE, ...(body.extra ? { extra: body.extra } : {}) });
      res.json({ ok: true, entryId, on: body.on });
    },
  });
}
