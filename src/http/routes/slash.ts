/**
 * `POST /api/slash/dispatch` (api-decisions.md, "Service routes with partial shape": Slash):
 * the command is checked against a whitelist; an allowed one is published as an event in
 * scope `chat/slash` for the console (and any other subscriber) to act on.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { unknownProject } from '../../engine/errors.js';
import { projectDir } from '../../engine/project-file.js';
import { ValidationError } from '../errors.js';
import type { Api } from '../route.js';
import { BodyId, ErrorBody } from '../schemas.js';
import type { AppDeps } from './deps.js';

export const SLASH_SCOPE = 'chat/slash';

/** The whitelist: command name → what it asks the console to do. */
export const SLASH_COMMANDS: Readonly<Record<string, string>> = Object.freeze({
  '/help': 'list the slash commands',
  '/status': 'show the service status',
  '/jobs': 'list the generation jobs',
  '/generate': 'generate a take (arguments: a shot id, optional)',
  '/memory': 'list the memory entries',
  '/clear': 'clear the chat',
});

const ALLOWED = Object.keys(SLASH_COMMANDS);

export const SlashRequest = z
  .object({
    command: z
      .string()
      .min(1)
      .max(2000)
      .meta({ description: `\`/<name>\` optionally followed by a space and arguments. Allowed names: ${ALLOWED.join(', ')}.` }),
    projectId: BodyId('projectId').optional().meta({ description: 'Alias project_id; malformed: 422 (type `invalid_id`), unknown project: 404.' }),
  })
  .meta({ id: 'SlashRequest' });

/**
 * Splits `/name args…` into its lower-cased name and its arguments (null when none).
 * @throws ValidationError (422) when the name is not on the whitelist; the message and
 *   `ctx.allowed` list the allowed commands.
 */
export function parseSlash(command: string): { name: string; args: string | null } {
  const m = /^(\/[A-Za-z][A-Za-z0-9_-]*)(?:\s+([\s\S]*))?$/.exec(command.trim());
  const name = m?.[1]?.toLowerCase();
  if (!m || name === undefined || !Object.hasOwn(SLASH_COMMANDS, name)) {
    const shown = command.trim().split(/\s/, 1)[0]?.slice(0, 64) ?? '';
    throw new ValidationError([
      {
        loc: ['body', 'command'],
        msg: `unknown slash command "${shown}"; allowed: ${ALLOWED.join(', ')}`,
        type: 'slash_command',
        ctx: { allowed: ALLOWED },
      },
    ]);
  }
  const args = m[2]?.trim();
  return { name, args: args ? args : null };
}

export function slashRoutes(api: Api, { bus, store }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/slash/dispatch',
    operationId: 'dispatchSlash',
    summary: 'Dispatch a slash command',
    description: `Whitelist: ${ALLOWED.map((c) => `\`${c}\` (${SLASH_COMMANDS[c]})`).join(', ')}. An allowed command is published as an \`info\` event in scope \`chat/slash\` (summary \`Slash command /<name>[ <args>]\`, payload \`command\`, \`args\`, \`project_id\`).`,
    tag: 'Chat',
    body: SlashRequest,
    answers: {
      202: {
        description: 'Published; `id` is the event id.',
        schema: z.object({
          id: z.string(),
          scope: z.literal(SLASH_SCOPE),
          command: z.string(),
          args: z.string().nullable(),
          projectId: z.string().nullable(),
        }),
      },
      404: { description: 'Unknown project.', schema: ErrorBody },
      422: {
        description: 'Not on the whitelist (the issue, type `slash_command`, lists the allowed commands in `msg` and `ctx.allowed`), or an invalid body (a malformed project id: type `invalid_id`).',
        schema: ErrorBody,
      },
    },
    handler: async ({ res, body }) => {
      const { name, args } = parseSlash(body.command);
      let projectId: string | null = null;
      if (body.projectId !== undefined) {
        projectId = body.projectId;
        if (!fs.statSync(projectDir(store.root, projectId), { throwIfNoEntry: false })?.isDirectory()) {
          throw unknownProject(projectId);
        }
      }
      const summary = `Slash command ${name}${args ? ` ${args}` : ''}`;
      const event = await bus.publishStored({
        severity: 'info',
        scope: SLASH_SCOPE,
        summary: summary.length > 300 ? `${summary.slice(0, 300)}…` : summary,
        payload: { command: name, args, project_id: projectId },
      });
      res.status(202).json({ id: event.id, scope: SLASH_SCOPE, command: name, args, projectId });
    },
  });
}
