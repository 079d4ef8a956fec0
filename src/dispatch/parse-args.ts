import { parseArgs } from 'node:util';
import { DispatchError } from './errors.js';
import { checkId } from './validate-id.js';

/** The model this tool renders with, and the one applied when `--model` is absent. */
export const DEFAULT_MODEL = 'local-testsrc-v1';

/** Printable ASCII without spaces: a model name ends up inside one-line progress output. */
const MODEL_PATTERN = /^[\x21-\x7E]{1,128}$/;

/** The validated command line. `shot` and `model` are null when their flag is absent. */
export interface DispatchArgs {
  project: string;
  shot: string | null;
  model: string | null;
  dryRun: boolean;
}

/** Parses `--project <id> [--shot <id>] [--model <name>] [--dry-run]`, ids checked before any disk access. @throws DispatchError (exit 2). */
export function parseDispatchArgs(argv: readonly string[]): DispatchArgs {
  const values = parseFlags(argv);
  if (values.project === undefined) throw new DispatchError('missing required flag --project');
  const model = values.model ?? null;
  if (model !== null && !MODEL_PATTERN.test(model)) {
    throw new DispatchError(`malformed model name ${JSON.stringify(model)}`);
  }
  return {
    project: checkId('project', values.project),
    shot: values.shot === undefined ? null : checkId('shot', values.shot),
    model,
    dryRun: values['dry-run'] ?? false,
  };
}

/** node:util's parseArgs of the tool's flags. @throws DispatchError (exit 2) for a usage error. */
function parseFlags(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        project: { type: 'string' },
        shot: { type: 'string' },
        model: { type: 'string' },
        'dry-run': { type: 'boolean', default: false },
      },
    }).values;
  } catch (error) {
    throw new DispatchError(error instanceof Error ? error.message : String(error), { cause: error });
  }
}
