/**
 * Process-level start-up and shutdown: reads the configuration once, starts the service and
 * turns SIGTERM/SIGINT into a graceful stop (exit 0). Any start-up failure (bad
 * configuration, a failing guard, an unusable state database) prints one message and exits
 * non-zero before anything is served.
 */
import { readConfig, secretsOf } from '../config/config.js';
import { Scrubber } from '../ops/log-scrub.js';
import { startService, type ServiceOptions } from './service.js';

/**
 * Runs the service in this process until a signal stops it.
 * @param opts injected registries and date (tests of the start-up guards).
 */
export async function runMain(opts: ServiceOptions = {}): Promise<void> {
  let service;
  try {
    const config = readConfig(process.env);
    service = await startService(config, opts);
  } catch (err) {
    // Through the logs' scrubber: a driver's message may echo the database URL.
    const message = new Scrubber(secretsOf(process.env)).plain(err instanceof Error ? err.message : String(err));
    process.stderr.write(`console-backend: ${message}\n`);
    process.exit(1);
  }
  let signals = 0;
  const stop = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
      process.stderr.write(`console-backend: second ${signal}, exiting now\n`);
      process.exit(1);
    }
    service.close().then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`console-backend: shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
