/**
 * Entry point of the engine CLI, `doctor` and `migrate` (README, "Engine doctor and migrate"); the
 * store is found by the service's own `readConfig`, so both always agree on where it is.
 */
import { runEngine } from './run-engine.js';

try {
  process.exitCode = runEngine({
    argv: process.argv.slice(2),
    env: process.env,
    io: {
      out: (line) => process.stdout.write(`${line}\n`),
      err: (line) => process.stderr.write(`${line}\n`),
    },
  });
} catch (err) {
  // An fs failure (permissions, a full disk): the store is left as the last atomic write made it.
  process.stderr.write(`engine: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exitCode = 1;
}
