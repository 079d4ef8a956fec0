/**
 * Zod schemas of request inputs and answers, shared by validation and the OpenAPI
 * document. Field names and constraints follow the spec and api-decisions.md.
 */
import { z } from 'zod';
import 'zod-openapi';
import { SEVERITIES } from '../bus/event.js';
import { EXIT_REASONS } from '../supervisor/job-state.js';
import { ID_PATTERN, ID_RULE, invalidIdMessage, isValidId } from '../engine/ids.js';
import { ANSWERED_CODES, ERROR_CATALOGUE } from './errors.js';

/**
 * The identifier rule as the OpenAPI description states it: path and query ids get the guard's
 * 400 `invalid_id`; body ids a 422 issue of type `invalid_id`; both with the same message.
 */
export const IDENTIFIER_RULE = `Identifiers (project, episode, scene, beat, shot, take, memory entry, workspace, proposal ids) are ${ID_RULE.replace(/^expected /, '')} (the pattern \`${ID_PATTERN.source}\`): they are checked against path traversal. A malformed identifier in the path or the query answers 400 \`invalid_id\` (the detail names the parameter); one in a JSON body answers 422 \`validation_failed\` with an issue \`{ loc: ["body", <member>], msg, type: "invalid_id" }\`, like any other invalid member.`;

/** A path segment checked by the identifier guard in the handler (400 `invalid_id`, not 422). */
export const PathId = (name: string) => z.string().meta({ description: `${name}; must match ${ID_PATTERN.source} and not contain "..", else 400 \`invalid_id\`` });

/** A query parameter checked by the identifier guard in the handler (400 `invalid_id`, as in a path). */
export const QueryId = (description: string) => z.string().meta({ description: `${description} Must match ${ID_PATTERN.source} and not contain "..", else 400 \`invalid_id\`.` });

/** An integer query parameter: decimal digits only (not `0x10` or `1e2`). */
export const QueryInt = (min: number, max: number, dflt: number) =>
  z
    .string()
    .regex(/^-?\d{1,16}$/, 'Input should be a valid integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max))
    .optional()
    .transform((v) => v ?? dflt)
    .meta({
      // Documented as what a client sends: an integer. The digits-only pattern of the string
      // side means nothing on an integer, so it is dropped rather than merged in.
      override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
        delete jsonSchema.pattern;
        Object.assign(jsonSchema, { type: 'integer', minimum: min, maximum: max, default: dflt });
      },
    });

/** A body identifier: malformed is a 422 issue of type `invalid_id` with the guard's message; `name` is the member. */
export const BodyId = (name: string) =>
  z
    .string()
    .superRefine((s, ctx) => {
      if (!isValidId(s)) ctx.addIssue({ code: 'custom', message: invalidIdMessage(name, s), params: { type: 'invalid_id' } });
    })
    .meta({ pattern: ID_PATTERN.source, description: `An identifier: must match ${ID_PATTERN.source} and not contain "..", else 422 (type \`invalid_id\`).` });

/**
 * Every code an error answer can carry, from the catalogue (errors.ts): the description lists
 * each with its status, and `x-status-of-code` maps them (each code has one status).
 */
export const ErrorCode = z.enum(ANSWERED_CODES as [string, ...string[]]).meta({
  id: 'ErrorCode',
  description: [
    'Which error this is (the catalogue, src/http/errors.ts). Each code has one status:',
    '',
    '| code | status | meaning |',
    '|---|---|---|',
    ...ANSWERED_CODES.map((c) => `| \`${c}\` | ${ERROR_CATALOGUE[c].status} | ${ERROR_CATALOGUE[c].means.replace(/\|/g, '\\|')} |`),
  ].join('\n'),
  'x-status-of-code': Object.fromEntries(ANSWERED_CODES.map((c) => [c, ERROR_CATALOGUE[c].status])),
});

/** One element of a 422 validation detail. */
export const ValidationIssue = z
  .object({
    loc: z.array(z.union([z.string(), z.number()])),
    msg: z.string(),
    type: z.string(),
    ctx: z.record(z.string(), z.unknown()).optional().meta({ description: 'Facts about the problem, e.g. `allowed` (the slash commands).' }),
  })
  .meta({ id: 'ValidationIssue' });

/** The standard error answers, documented once. */
export const ErrorBody = z
  .object({
    detail: z.union([z.string(), z.array(ValidationIssue), z.record(z.string(), z.unknown())]),
    code: ErrorCode,
    requestId: z
      .string()
      .optional()
      .meta({ description: 'Only on a 500 `internal` (an error the service did not expect): the request’s id, also sent as `X-Request-Id`, by which the error and its stack are found in the log.' }),
  })
  .meta({
    id: 'ErrorBody',
    description:
      'Error answer: `detail` is a string, a validation list (`validation_failed`), or a MissingCanonicalField object (`missing_canonical_field`); `code` says which error it is. Every answer carries the request’s id in `X-Request-Id`.',
  });

export const Severity = z.enum(SEVERITIES).meta({ id: 'EventSeverity' });

export const EngineEvent = z
  .object({
    id: z.string().meta({ description: 'Decimal digits, strictly increasing; usable as sinceId and Last-Event-ID.' }),
    ts: z.string().meta({ description: 'ISO-8601 UTC with milliseconds.' }),
    severity: Severity,
    scope: z.string(),
    summary: z.string(),
    detail: z.string().nullable(),
    payload: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'EngineEvent' });

const EventFilterFields = {
  severities: z
    .union([Severity, z.array(Severity)])
    .optional()
    .transform((v) => (v === undefined ? null : Array.isArray(v) ? v : [v]))
    .meta({ description: 'Repeatable: `?severities=info&severities=failure`.' }),
  scopePrefix: z.string().optional().meta({ description: 'Keeps events whose scope starts with this text.' }),
  sinceId: z
    .string()
    .regex(/^\d{1,15}$/, 'must be an event id (decimal digits)')
    .optional()
    .meta({ description: 'Only events with a greater id.' }),
};

/** `proposalId`: events about one proposal or generation job. */
const ProposalFilterField = {
  proposalId: QueryId(
    'Keeps the events about this proposal: those whose payload has it as `proposal_id` (a job’s spawn, exit, leftovers and lost events; proposal and decision events) and a generation job’s output lines.',
  ).optional(),
};

/** The query of a job's events (`GET /api/jobs/{proposalId}/events`): the list's, the job given by the path. */
export const JobEventsQuery = z.object({
  ...EventFilterFields,
  limit: QueryInt(1, 500, 200).meta({ description: '1..500, default 200.' }),
});

export const EventsQuery = JobEventsQuery.extend(ProposalFilterField);

export const StreamQuery = z.object({
  ...EventFilterFields,
  ...ProposalFilterField,
  token: z.string().optional().meta({ description: 'Bearer token, for EventSource clients that cannot set headers.' }),
});

export const GenerationRequestBody = z
  .object({
    project: BodyId('project').meta({ description: 'Project identifier.' }),
    episode: z.number().int().nullable().optional().meta({ description: 'Accepted and logged; never forwarded.' }),
    shotId: z
      .string()
      .nullable()
      .optional()
      .superRefine((s, ctx) => {
        // Empty means none, as null does.
        if (s && !isValidId(s)) ctx.addIssue({ code: 'custom', message: invalidIdMessage('shotId', s), params: { type: 'invalid_id' } });
      })
      .meta({ description: 'Alias shot_id. Forwarded as the single shot id; empty or null: none. An identifier (else 422, type `invalid_id`).' }),
    model: z
      .string()
      .nullable()
      .optional()
      .refine((s) => !s || /^[A-Za-z0-9][A-Za-z0-9._:/+-]{0,127}$/.test(s), 'must be a model name (letters, digits, . _ : / + -)')
      .meta({ description: 'Forwarded when non-empty; the dispatch tool applies its own default when absent.' }),
    modality: z.string().default('video_i2v').meta({ description: 'Accepted and logged; never forwarded.' }),
    dryRun: z.boolean().default(false).meta({ description: 'Alias dry_run. When true, --dry-run is forwarded.' }),
  })
  .meta({ id: 'GenerationRequest', description: 'camelCase and snake_case member names are both accepted.' });

export const GenerationRequestForProject = GenerationRequestBody.extend({
  project: BodyId('project').optional().meta({ description: 'Must equal the path segment when given.' }),
}).meta({ id: 'GenerationRequestForProject' });

export const GenerationAccepted = z
  .object({
    proposalId: z.string().regex(/^gen_[0-9a-f]{12}$/),
    pid: z.number().int(),
    scope: z.literal('engine/generation'),
  })
  .meta({ id: 'GenerationAccepted' });

/** A job's states: running, then one of the three ends. */
export const JOB_STATES = ['running', 'exited ok', 'exited failed', 'lost'] as const;

export const Job = z
  .object({
    proposalId: z.string(),
    projectId: z.string(),
    pid: z.number().int().nullable(),
    argv: z.array(z.string()),
    state: z.enum(JOB_STATES),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
    rc: z.number().int().nullable(),
    signal: z.string().nullable(),
    stdoutLines: z.number().int(),
    stderrLines: z.number().int(),
    cancelRequested: z.boolean(),
    exitReason: z.enum(EXIT_REASONS).nullable().meta({
      description:
        'Why it ended (null while running): `exited` (the tool ended by itself, whatever its code), `cancelled` (a cancel request), `shutdown` (the service stopped), `lost` (found running after the service itself died; its line counts are read from its stored events), `spawn failed` (the operating system refused to start the tool: recorded at once, no pid).',
    }),
    exitDetail: z.string().nullable().meta({
      description: 'What says more: for a failed job, the tool’s last stderr line (bounded by CONSOLE_LINE_MAX_BYTES; null when it wrote none); for `spawn failed`, the refusal with its errno.',
    }),
    instanceId: z.string().optional().meta({ description: 'Cluster mode only: the instance that runs (or ran) the job, whose machine has its processes (CONSOLE_INSTANCE_ID).' }),
  })
  .meta({ id: 'Job' });

/** A time in a query: RFC 3339 with a zone (`Z` or an offset), normalised to UTC as jobs store it. */
const QueryTime = (description: string) =>
  z.iso
    .datetime({ offset: true, message: 'must be an RFC 3339 date-time with a zone, e.g. 2026-11-23T22:00:00Z' })
    .transform((s) => new Date(s).toISOString())
    .optional()
    .meta({ description });

/** Where a page of `GET /api/jobs` starts: the last job of the previous page, as `X-Next-Cursor` carries it. */
export interface JobsCursor {
  readonly startedAt: string;
  readonly proposalId: string;
}

/** Encodes the position of a job as an opaque cursor (base64url of its start time and id). */
export function encodeJobsCursor(c: JobsCursor): string {
  return Buffer.from(JSON.stringify([c.startedAt, c.proposalId]), 'utf8').toString('base64url');
}

/** Decodes a cursor; null when it is not one {@link encodeJobsCursor} made. */
function decodeJobsCursor(s: string): JobsCursor | null {
  try {
    const v: unknown = JSON.parse(Buffer.from(s, 'base64url').toString('utf8'));
    if (Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && typeof v[1] === 'string' && !Number.isNaN(Date.parse(v[0])) && isValidId(v[1])) {
      return { startedAt: v[0], proposalId: v[1] };
    }
  } catch {
    // reported below
  }
  return null;
}

export const JobsQuery = z.object({
  state: z
    .union([z.enum(JOB_STATES), z.array(z.enum(JOB_STATES))])
    .optional()
    .transform((v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]))
    .meta({ description: 'Only jobs in this state; repeatable for several (`?state=exited failed&state=lost`).' }),
  projectId: QueryId('Only the jobs of this project.').optional(),
  from: QueryTime('Only jobs started at or after this time (RFC 3339, e.g. `2026-11-23T22:00:00Z`).'),
  to: QueryTime('Only jobs started before this time (RFC 3339).'),
  cursor: z
    .string()
    .max(1024)
    .transform((s, ctx) => {
      const c = decodeJobsCursor(s);
      if (c === null) {
        ctx.addIssue({ code: 'custom', message: 'not a cursor of this list: pass the X-Next-Cursor of the previous page as it came', params: { type: 'cursor' } });
        return z.NEVER;
      }
      return c;
    })
    .optional()
    .meta({ description: 'The next page: the `X-Next-Cursor` header of the previous answer, with the same filters. Pages are keyed on the last job shown, so jobs started meanwhile shift nothing.' }),
  limit: QueryInt(1, 500, 100).meta({ description: 'Jobs per page, 1..500, default 100.' }),
});

const loose = (id: string, description: string, shape: z.ZodRawShape = {}) => z.looseObject(shape).meta({ id, description });

export const Project = loose('Project', 'project.json of a format-2 project, as stored.', {
  format: z.number().int(),
  id: z.string(),
  title: z.string(),
});
export const Episode = loose('Episode', 'One per distinct episode number across the shot files.', {
  id: z.string(),
  project_id: z.string(),
  number: z.number().int(),
  title: z.string(),
  synthesized: z.literal(true),
  scene_count: z.number().int(),
  beat_count: z.number().int(),
  shot_count: z.number().int(),
});
export const Scene = loose('Scene', 'The one synthetic scene (`main`) of an episode.', {
  id: z.string(),
  project_id: z.string(),
  episode_id: z.string(),
  synthesized: z.literal(true),
});
export const Beat = loose('Beat', 'One per distinct beat_id among an episode’s shots, ordered by their smallest order.', {
  id: z.string(),
  episode_id: z.string(),
  scene_id: z.string(),
  order: z.number().nullable(),
  shot_ids: z.array(z.string()),
});
export const Take = loose('Take', 'The take file’s members plus the recorded console state.', {
  take_id: z.string(),
  shot_id: z.string(),
  parent_take_id: z.string().nullable(),
  primary: z.boolean(),
  circled: z.boolean(),
  rejected: z.boolean(),
});
export const Lineage = loose('Lineage', 'Graph of a beat (or of one take’s parent chain).', {
  project_id: z.string(),
  beat_id: z.string(),
  root: z.object({ kind: z.enum(['beat', 'take']), id: z.string() }),
  nodes: z.array(z.looseObject({ key: z.string(), kind: z.enum(['beat', 'shot', 'take']), id: z.string() })),
  edges: z.array(z.object({ from: z.string(), to: z.string() })),
});
export const MemoryEntry = loose('MemoryEntry', 'A memory entry file; `enabled` reflects the last recorded toggle.', {
  id: z.string(),
  text: z.string(),
  enabled: z.boolean(),
});
export const MissingCanonicalField = z
  .object({
    detail: z.object({
      error: z.literal('missing_canonical_field'),
      field: z.string(),
      project_id: z.string().nullable(),
      remediation: z.string(),
      fix_cli: z.string(),
    }),
    code: z.literal('missing_canonical_field'),
  })
  .meta({ id: 'MissingCanonicalField' });

/** How a 422 describes a store file that cannot be used, for the routes that read the store. */
export const STORE_FILE_422 =
  'A store file that cannot be used answers the same detail: `field` is its first canonical field, `remediation` names the file relative to the store and why: `not a regular file (a named pipe)` (a socket, a character device, a folder…), `a symbolic link leading outside <its folder>`, `a symbolic link loop…`, `larger than <n> bytes, CONSOLE_STORE_FILE_MAX_BYTES`, `nested deeper than <n> levels at line <l> column <c>, CONSOLE_STORE_JSON_MAX_DEPTH`, `invalid JSON at line <l> column <c>: <what was expected>` (fix: `fix the JSON syntax`). A canonical field present with another type says so: `has the wrong type (a string, expected an integer)` (fix: `make it an integer`). It never quotes the file’s contents.';

/**
 * The 304 of the read routes that answer cached bodies with an ETag (routes/send.ts): the
 * request's `If-None-Match` names the current one.
 */
export const NotModified = {
  description: 'Not modified: `If-None-Match` names the answer’s current ETag (a weak validator). No body.',
  headers: { ETag: 'The current ETag.' },
};

/** The 503 of a store read past CONSOLE_STORE_READ_TIMEOUT_MS. */
export const StoreReadTimeout = {
  description:
    'Reading the store took longer than CONSOLE_STORE_READ_TIMEOUT_MS: `reading the engine store took longer than <n> ms (CONSOLE_STORE_READ_TIMEOUT_MS): try again`, with `Retry-After` (CONSOLE_RETRY_AFTER_SECONDS). Nothing is cached: the next request reads again.',
  schema: ErrorBody,
  headers: { 'Retry-After': 'Seconds to wait (CONSOLE_RETRY_AFTER_SECONDS).' },
};
