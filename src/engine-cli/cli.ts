/**
 * Entry point of the engine CLI (README, "Engine doctor and migrate"):
 *
 *   npm run engine -- doctor [--project <id>] [--fix] [--strict] [--json]
 *   npm run engine -- migrate --project <id> [--dry-run] [--json]
 *
 * Built to dist/engine-cli/cli.js. The store is found with the service's own `readConfig`
 * (src/config/config.ts), so the CLI and the service always agree on where it is.
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
