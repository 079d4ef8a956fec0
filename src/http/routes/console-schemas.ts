/**
 * Zod schemas of the console-state routes (proposals, takes, memory toggles, clicks,
 * workspace state, selection, recent), shared by validation and the OpenAPI document.
 */
import { z } from 'zod';
import 'zod-openapi';
import { DECISIONS } from '../../console/index.js';
import { BodyId } from '../schemas.js';

/** A JSON value that must be present (any type, null included); absent is a 422 `missing`. */
export const JsonValue = (description: string) =>
  z
    .unknown()
    .superRefine((v, ctx) => {
      if (v === undefined) ctx.addIssue({ code: 'invalid_type', expected: 'json' as never, input: v, message: 'Field required' });
    })
    .meta({ description });

/** An event scope: slash-separated segments of letters, digits, `.`, `_` and `-`, each starting with a letter or digit. */
export const Scope = z
  .string()
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]*(\/[A-Za-z0-9][A-Za-z0-9_.-]*)*$/, 'must be slash-separated segments of letters, digits, ".", "_" or "-", each starting with a letter or digit');

/** Extra event payload members; they never replace the members the event itself defines. */
export const Extra = z.record(z.string(), z.unknown()).meta({ description: 'Extra members added to the event payload (they cannot replace the event’s own members).' });

export const KindName = z.string().min(1).max(128).meta({ description: 'Proposal kind name, e.g. `GenerationProposal`.' });

export const DecisionValue = z.enum(DECISIONS).meta({ id: 'Decision' });

export const ProposalStatus = z.enum(['pending', ...DECISIONS]).meta({ id: 'ProposalStatus' });

export const Proposal = z
  .object({
    id: z.string().meta({ description: '`prop_<12 hex>` (created here) or `gen_<12 hex>` (an accepted generation request).' }),
    kind: z.string().nullable(),
    title: z.string().nullable(),
    payload: z.record(z.string(), z.unknown()),
    status: ProposalStatus,
    createdAt: z.string(),
    decidedAt: z.string().nullable(),
  })
  .meta({ id: 'Proposal' });

export const DecisionAnswer = z
  .object({
    ok: z.literal(true).meta({ description: 'Always true, also when the id was not pending (the fallback case).' }),
    proposalId: z.string(),
    decision: DecisionValue,
    deferredExecution: z.boolean(),
  })
  .meta({ id: 'DecisionAnswer' });

export const DecisionRecord = z
  .object({
    id: z.number().int(),
    proposalId: z.string(),
    decision: DecisionValue,
    kind: z.string().nullable(),
    label: z.string(),
    wasPending: z.boolean(),
    deferredExecution: z.boolean(),
    severity: z.string(),
    scope: z.string(),
    extra: z.record(z.string(), z.unknown()),
    decidedAt: z.string(),
  })
  .meta({ id: 'DecisionRecord' });

export const TakeStateSchema = z.object({ primary: z.boolean(), circled: z.boolean(), rejected: z.boolean() }).meta({ id: 'TakeState' });

export const Click = z
  .object({
    id: z.number().int(),
    projectId: z.string(),
    target: z.string(),
    x: z.number().nullable(),
    y: z.number().nullable(),
    meta: z.record(z.string(), z.unknown()).nullable(),
    clickedAt: z.string(),
  })
  .meta({ id: 'Click' });

export const WorkspaceState = z
  .object({
    wid: z.string(),
    revision: z.number().int().min(1),
    state: z.unknown().meta({ description: 'The JSON value last stored.' }),
    updatedAt: z.string(),
  })
  .meta({ id: 'WorkspaceState' });

export const WorkspaceReport = z
  .object({
    id: z.number().int(),
    wid: z.string(),
    reason: z.string().nullable(),
    blob: z.unknown(),
    bytes: z.number().int(),
    receivedAt: z.string(),
  })
  .meta({ id: 'WorkspaceReport' });

const SelectedId = (what: string) =>
  BodyId(`${what}Id`)
    .nullable()
    .optional()
    .meta({ description: `Selected ${what} id (alias snake_case).` });

/** A selection: the known item members are ids; any other member is kept as given. */
export const SelectionBody = z
  .looseObject({
    episodeId: SelectedId('episode'),
    sceneId: SelectedId('scene'),
    beatId: SelectedId('beat'),
    shotId: SelectedId('shot'),
    takeId: SelectedId('take'),
  })
  .meta({ id: 'Selection' });

export const SelectionAnswer = z
  .object({
    projectId: z.string(),
    selection: SelectionBody.nullable().meta({ description: 'Null when nothing was stored for the project.' }),
    updatedAt: z.string().nullable(),
  })
  .meta({ id: 'SelectionAnswer' });

export const RecentEntry = z.object({ projectId: z.string(), kind: z.string(), id: z.string(), openedAt: z.string() }).meta({ id: 'RecentEntry' });
