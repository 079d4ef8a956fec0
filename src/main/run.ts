// Process-level start-up and shutdown: SIGTERM/SIGINT stop gracefully (exit 0); a start-up failure prints one message and exits 1.
import { readConfig, secretsOf } from '../config/config.js';
import { Scrubber } from '../ops/log-scrub.js';
import { startService, type Service, type ServiceOptions } from './service.js';

/** Runs the service in this process until a signal stops it; `opts` are injected by the start-up guards' tests. */
export async function runMain(opts: ServiceOptions = {}): Promise<void> {
  let service: Service;
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
