/**
 * Entry point of the dispatch tool (engine-format.md, "The dispatch tool"):
 *
 *   node dist/dispatch/cli.js --project <id> [--shot <shot_id>] [--model <name>] [--dry-run]
 *
 * Without `--shot` the tool renders the project's first shot (by episode, then `order`,
 * then shot id) that has no take yet, and when every shot has one it prints
 * `nothing to render: every shot has a take` and exits 0. Without `--model` it uses
 * `local-testsrc-v1`, the only backend it has; another name is accepted with a warning
 * and rendered with that backend. See `runDispatch` for outputs and exit codes.
 *
 * The store root is `CONSOLE_DATA_DIR` (the service passes it to the child), else the
 * repository's bundled `sample-store/`. This is the tool's only read of the environment:
 * it is a separate program from the service, so it cannot share `src/config/config.ts`.
 */
import { runDispatch } from './run-dispatch.js';
import { resolveStoreRoot } from './resolve-store-root.js';

process.exitCode = await runDispatch({
  argv: process.argv.slice(2),
  storeRoot: resolveStoreRoot(process.env['CONSOLE_DATA_DIR'], import.meta.url),
  io: {
    // Writes to pipes and files are synchronous on POSIX, so each line reaches the
    // service's line reader as soon as it is printed, and nothing is lost at exit
    // because the process ends by running out of work, never by process.exit().
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
});
