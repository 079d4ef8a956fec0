/**
 * `POST /api/chat` (api-decisions.md, "Service routes with partial shape": Chat): a canned,
 * deterministic reply streamed as Server-Sent Events frames `data: {"delta": "…"}` and a last
 * `data: [DONE]`. No language service is called and no process is started; no event is
 * published.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { unknownProject } from '../../engine/errors.js';
import { projectDir } from '../../engine/project-file.js';
import type { Api } from '../route.js';
import { BodyId, ErrorBody } from '../schemas.js';
import type { AppDeps } from './deps.js';
import { SLASH_COMMANDS } from './slash.js';

/** Longest part of the message quoted back in the reply, in characters. */
const QUOTE_MAX = 200;

export const ChatRequest = z
  .object({
    message: z.string().min(1).max(16_000),
    projectId: BodyId('projectId').optional().meta({ description: 'Alias project_id; malformed: 422 (type `invalid_id`), unknown project: 404.' }),
  })
  .meta({ id: 'ChatRequest' });

/**
 * The reply to `message`: the same text for the same inputs.
 * @param projectId the project the user is working on, if any.
 */
export function cannedReply(message: string, projectId: string | null): string {
  const flat = message.replace(/\s+/g, ' ').trim();
  const quote = flat.length > QUOTE_MAX ? `${flat.slice(0, QUOTE_MAX)}…` : flat;
  const context = projectId ? `You are working on project ${projectId}.` : 'No project is selected.';
  return [
    `You said: "${quote}".`,
    context,
    'This assistant is a canned reply: it calls no language service.',
    'What the console can do: browse projects, episodes, beats, takes and their lineage;',
    'launch generation jobs and follow their output on the event stream;',
    'open a terminal in a project’s folder;',
    `and run slash commands (${Object.keys(SLASH_COMMANDS).join(', ')}).`,
  ].join(' ');
}

/** The reply cut into deltas of one word each (with its trailing space), as a client would stream them. */
export function toDeltas(text: string): string[] {
  return text.match(/\S+\s*/g) ?? [];
}

export function chatRoutes(api: Api, { store }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/chat',
    operationId: 'chat',
    summary: 'Chat (canned reply, streamed)',
    description:
      'Answers `text/event-stream`: one `data: {"delta": "<text>"}` frame per word, then `data: [DONE]`. Concatenating the deltas gives the reply. Deterministic; no external call, no subprocess.',
    tag: 'Chat',
    body: ChatRequest,
    answers: {
      200: {
        description: 'Frames `data: {"delta": "…"}` then `data: [DONE]`.',
        contentType: 'text/event-stream',
        schema: z.string().meta({ example: 'data: {"delta":"You "}\n\ndata: {"delta":"said: "}\n\ndata: [DONE]\n\n' }),
      },
      404: { description: 'Unknown project.', schema: ErrorBody },
      422: { description: 'Missing or empty message, or a malformed project id (an issue of type `invalid_id`).', schema: ErrorBody },
    },
    handler: ({ res, body }) => {
      let projectId: string | null = null;
      if (body.projectId !== undefined) {
        projectId = body.projectId;
        if (!fs.statSync(projectDir(store.root, projectId), { throwIfNoEntry: false })?.isDirectory()) {
          throw unknownProject(projectId);
        }
      }
      res.status(200).set({
        'Content-Type': 'text/event-stream; charset=utf-8',
        'Cache-Control': 'no-cache',
        'X-Accel-Buffering': 'no',
      });
      let out = '';
      for (const delta of toDeltas(cannedReply(body.message, projectId))) out += `data: ${JSON.stringify({ delta })}\n\n`;
      res.end(`${out}data: [DONE]\n\n`);
    },
  });
}
