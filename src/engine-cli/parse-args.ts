/** The engine CLI's command line (README, "Engine doctor and migrate"); `USAGE` lists it. */
import { parseArgs } from 'node:util';
import { checkId } from '../engine/ids.js';

export const USAGE = `usage: npm run engine -- <command> [options]

commands:
  doctor [--project <id>] [--fix] [--strict] [--json]
      Report every problem the service answers 410 (legacy format) or 422 (missing
      canonical field) for, and warnings (dangling take links, missing media), for the
      whole store or one project. --fix repairs what can be derived safely (format,
      ids from file and directory names, a placeholder title) and names the file and
      field to set by hand for the rest. Exit 0 healthy, 1 problems (warnings count
      only with --strict), 2 usage error.
  migrate --project <id> [--dry-run] [--json]
      Convert a legacy (format 1) project to format 2; the legacy files are kept under
      the project's legacy/ folder. --dry-run prints the plan and writes nothing.
      Exit 0 migrated (or already migrated), 1 refused, 2 usage error.

The store is CONSOLE_DATA_DIR, else the service's default store (see README).`;

/** A bad command line: printed with the usage, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export type EngineArgs =
  | { readonly command: 'help' }
  | { readonly command: 'doctor'; readonly project: string | null; readonly fix: boolean; readonly strict: boolean; readonly json: boolean }
  | { readonly command: 'migrate'; readonly project: string; readonly dryRun: boolean; readonly json: boolean };

/**
 * Parses the arguments after the script path.
 * @throws UsageError for a missing or unknown command, an unknown flag, a positional argument,
 *   a missing `--project` (migrate) or a malformed project id.
 */
export function parseEngineArgs(argv: readonly string[]): EngineArgs {
  const [command, ...rest] = argv;
  if (command === undefined) throw new UsageError('missing command');
  if (command === 'help' || command === '--help' || command === '-h' || rest.includes('--help') || rest.includes('-h')) {
    return { command: 'help' };
  }
  switch (command) {
    case 'doctor': {
      const v = parse(rest, { project: { type: 'string' }, fix: { type: 'boolean' }, strict: { type: 'boolean' }, json: { type: 'boolean' } });
      return {
        command,
        project: v.project === undefined ? null : projectId(v.project),
        fix: v.fix === true,
        strict: v.strict === true,
        json: v.json === true,
      };
    }
    case 'migrate': {
      const v = parse(rest, { project: { type: 'string' }, 'dry-run': { type: 'boolean' }, json: { type: 'boolean' } });
      if (v.project === undefined) throw new UsageError('migrate needs --project <id>');
      return { command, project: projectId(v.project), dryRun: v['dry-run'] === true, json: v.json === true };
    }
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}`);
  }
}

type Options = Record<string, { type: 'string' | 'boolean' }>;

function parse(args: string[], options: Options): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    // parseArgs throws TypeErrors (ERR_PARSE_ARGS_*) for unknown flags and stray arguments.
    throw new UsageError((err as Error).message, { cause: err });
  }
}

function projectId(value: string | boolean): string {
  try {
    return checkId('project', value);
  } catch (err) {
    throw new UsageError((err as Error).message, { cause: err });
  }
}
