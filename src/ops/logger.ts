// Structured logs (pino); the logger scrubs every line itself (log-scrub.ts), so no caller can leak a credential.
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogFormat, LogLevel } from '../config/config.js';
import { Scrubber } from './log-scrub.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Where lines go; default stdout, written asynchronously. */
  readonly destination?: DestinationStream;
  /** Values never written as such (CONSOLE_API_TOKEN), also percent-encoded; blank or null ones are ignored. */
  readonly secrets?: readonly (string | null)[];
  /** LOG_FORMAT: `json` (default) or `pretty` (pino-pretty, synchronous, coloured on a terminal); scrubbed the same. */
  readonly format?: LogFormat;
}

/** A logger writing JSON lines at `level`; stdout writes are asynchronous, so logging costs a request no system call. */
export function createLogger(level: LogLevel, options: LoggerOptions = {}): Logger {
  const scrub = new Scrubber(options.secrets);
  return pino(
    {
      level,
      base: { service: 'console-backend' },
      formatters: { log: (obj) => scrub.members(obj) },
      serializers: {
        err: (err: Error) => {
          // pino's serialised error has a prototype of its own: its own members, as a plain object.
          const out: unknown = pino.stdSerializers.err(err);
          return scrub.members(out !== null && typeof out === 'object' ? { ...out } : out);
        },
      },
      hooks: { streamWrite: (line) => scrub.text(line) },
    },
    options.format === 'pretty' ? pretty(options.destination) : (options.destination ?? pino.destination({ dest: 1, sync: false })),
  );
}

/** pino-pretty's stream, loaded only for LOG_FORMAT=pretty: JSON logs never pay its memory. */
function pretty(destination: DestinationStream | undefined): DestinationStream {
  const { build: prettyStream } = createRequire(import.meta.url)('pino-pretty') as typeof import('pino-pretty');
  return prettyStream({
    translateTime: 'SYS:yyyy-mm-dd HH:MM:ss.l',
    ignore: 'service',
    colorize: destination === undefined && process.stdout.isTTY === true,
    // For people, at the pace people read: each line is written at once, so none is lost at exit.
    sync: true,
    ...(destination ? { destination } : { destination: 1 }),
  });
}
