/** Entry point of the dispatch tool (engine-format.md §The dispatch tool); a separate program, it reads only CONSOLE_DATA_DIR, not src/config. */
import { runDispatch } from './run-dispatch.js';
import { resolveStoreRoot } from './resolve-store-root.js';

process.exitCode = await runDispatch({
  argv: process.argv.slice(2),
  storeRoot: resolveStoreRoot(process.env.CONSOLE_DATA_DIR, import.meta.url),
  io: {
    // Synchronous pipe writes on POSIX: each line reaches the service at once, none lost at exit.
    out: (line) => process.stdout.write(`${line}\n`),
    err: (line) => process.stderr.write(`${line}\n`),
  },
});
