/**
 * Per-project terminals (api-decisions.md, "Service routes with partial shape": Terminal):
 * `POST /api/ttyd/start`, `POST /api/ttyd/stop`, `GET /api/ttyd/status`,
 * `GET /api/ttyd/context-window`. The work is done by src/terminals (TerminalManager).
 */
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import { TerminalNotRunningError, type TerminalInfo } from '../../terminals/index.js';
import type { Api } from '../route.js';
import { BodyId, ErrorBody, QueryId } from '../schemas.js';
import type { AppDeps } from './deps.js';

const ProjectIdMember = BodyId('projectId').meta({ description: 'Project id (alias project_id); a malformed id is a 422 (type `invalid_id`), an unknown project a 404.' });

export const Terminal = z
  .object({
    projectId: z.string(),
    state: z.enum(['running', 'exited', 'stopped']).meta({ description: '`exited`: died by itself; `stopped`: by a stop request or the shutdown.' }),
    pid: z.number().int(),
    port: z.number().int(),
    url: z.string().meta({ description: '`http://<TTYD_HOST or HOST>:<port>/`' }),
    cwd: z.string().meta({ description: 'The project’s directory in the engine store.' }),
    command: z.array(z.string()).meta({ description: 'What the terminal runs (TTYD_COMMAND).' }),
    argv: z.array(z.string()).meta({ description: 'The terminal program’s full argument list.' }),
    startedAt: z.string(),
    endedAt: z.string().nullable(),
    rc: z.number().int().nullable().meta({ description: 'Exit code; 128 + signal number when killed by a signal.' }),
    signal: z.string().nullable(),
    credential: z.string().nullable().meta({
      description:
        'With CONSOLE_API_TOKEN set: the terminal’s own HTTP credential, `console:<password>` (random per terminal), which it asks for (HTTP Basic); the terminal then listens on HOST. Without the token: null, and the terminal listens on loopback only. In `argv` its password reads `[REDACTED]`.',
    }),
  })
  .meta({ id: 'Terminal' });

const ContextWindow = z
  .object({
    projectId: z.string(),
    cwd: z.string(),
    command: z.array(z.string()),
    port: z.number().int(),
    url: z.string(),
    startedAt: z.string(),
    pid: z.number().int(),
  })
  .meta({ id: 'TerminalContextWindow' });

const Unavailable = {
  description: 'The terminal program cannot be found or is not executable, every port of the range is taken, it exited during start-up, or the service is stopping; `detail` says which.',
  schema: ErrorBody,
};

export function terminalRoutes(api: Api, { terminals }: AppDeps): void {
  api.route({
    method: 'post',
    path: '/api/ttyd/start',
    operationId: 'startTerminal',
    summary: 'Start the project’s terminal (or return the running one)',
    description:
      'Starts `<TTYD_BIN> --port <p> [--interface <HOST>] --writable --check-origin <TTYD_COMMAND…>` without a shell, in the project’s directory, as the leader of its own process group, on the lowest free port of CONSOLE_TTYD_PORTS; answers once it accepts connections. Event: `ttyd started pid=<pid> port=<port>` (scope `terminal/<projectId>`). In cluster mode a terminal of the project running on another instance is that one (200, its URL at that instance’s host).',
    tag: 'Terminals',
    body: z.object({ projectId: ProjectIdMember }),
    answers: {
      200: { description: 'A terminal was already running for the project: that one.', schema: Terminal },
      201: { description: 'Started.', schema: Terminal },
      404: { description: 'Unknown project.', schema: ErrorBody },
      422: { description: 'Invalid body, or a malformed project id (an issue of type `invalid_id`).', schema: ErrorBody },
      503: Unavailable,
    },
    handler: async ({ res, body }) => {
      const { created, terminal } = await terminals.start(body.projectId);
      res.status(created ? 201 : 200).json(terminal);
    },
  });

  api.route({
    method: 'post',
    path: '/api/ttyd/stop',
    operationId: 'stopTerminal',
    summary: 'Stop the project’s terminal',
    description:
      'SIGTERM to its process group and tree, SIGKILL after CONSOLE_KILL_GRACE_MS; answers once it has exited. Stopping a project without a running terminal is not an error (`stopped: false`). Event: `ttyd stopped rc=<rc>`. In cluster mode the stop reaches the instance that runs the terminal, through the database.',
    tag: 'Terminals',
    body: z.object({ projectId: ProjectIdMember }),
    answers: {
      200: {
        description: 'Stopped (or nothing was running).',
        schema: z.object({ stopped: z.boolean(), terminal: Terminal.nullable() }),
      },
      404: { description: 'Unknown project.', schema: ErrorBody },
      422: { description: 'Invalid body, or a malformed project id (an issue of type `invalid_id`).', schema: ErrorBody },
      504: { description: 'Cluster mode: the instance that runs the terminal did not acknowledge the stop within 5 s (`owner_not_acknowledged`).', schema: ErrorBody },
    },
    handler: async ({ res, body }) => {
      res.json(await terminals.stop(body.projectId));
    },
  });

  api.route({
    method: 'get',
    path: '/api/ttyd/status',
    operationId: 'terminalStatus',
    summary: 'Terminals: all, or one project’s',
    description:
      'The latest terminal of each project started since the service started, running or not (a terminal that died by itself shows as `exited` with its code). In cluster mode every instance’s, from the database (another instance’s terminal has an empty `argv`).',
    tag: 'Terminals',
    query: z.object({ projectId: QueryId('Only this project’s terminal (a list of 0 or 1).').optional() }),
    answers: {
      200: { description: 'Terminals by project id.', schema: z.object({ terminals: z.array(Terminal) }) },
      400: { description: 'Malformed project id.', schema: ErrorBody },
    },
    handler: async ({ res, query }) => {
      let list: TerminalInfo[];
      if (query.projectId === undefined) list = await terminals.list();
      else {
        const one = await terminals.get(checkId('project_id', query.projectId));
        list = one ? [one] : [];
      }
      res.json({ terminals: list });
    },
  });

  api.route({
    method: 'get',
    path: '/api/ttyd/context-window',
    operationId: 'terminalContextWindow',
    summary: 'The working context of the project’s running terminal',
    tag: 'Terminals',
    query: z.object({ projectId: QueryId('Project id (alias project_id).') }),
    answers: {
      200: { description: 'Working directory, command, port, URL, start time and pid.', schema: ContextWindow },
      400: { description: 'Malformed project id.', schema: ErrorBody },
      404: { description: 'No running terminal for the project.', schema: ErrorBody },
      422: { description: 'Missing projectId.', schema: ErrorBody },
    },
    handler: async ({ res, query }) => {
      const id = checkId('project_id', query.projectId);
      const t = await terminals.get(id);
      if (t?.state !== 'running') throw new TerminalNotRunningError(id);
      res.json({ projectId: t.projectId, cwd: t.cwd, command: t.command, port: t.port, url: t.url, startedAt: t.startedAt, pid: t.pid });
    },
  });
}
