/**
 * Structured logs (pino): one JSON line per event worth an operator's attention. No line
 * carries a credential (issue 10, item 8): the logger itself scrubs every line (log-scrub.ts),
 * so no future line can leak one either.
 */
import { createRequire } from 'node:module';
import { pino, type DestinationStream, type Logger } from 'pino';
import type { LogFormat, LogLevel } from '../config/config.js';
import { Scrubber } from './log-scrub.js';

export type { Logger } from 'pino';

export interface LoggerOptions {
  /** Where lines go; default stdout (fd 1), written asynchronously. Tests pass a stream they read. */
  readonly destination?: DestinationStream;
  /** Values never written as such (CONSOLE_API_TOKEN), also percent-encoded; blank or null ones are ignored. */
  readonly secrets?: readonly (string | null)[];
  /**
   * LOG_FORMAT (issue 14, item 5): `json` (default), or `pretty`: pino-pretty's lines for people
   * (local time, level name, message, then the line's fields), written synchronously to stdout
   * (or `destination`), coloured on a terminal. The scrubbing is the same: pino-pretty reads
   * the line as written.
   */
  readonly format?: LogFormat;
}

/**
 * A logger writing JSON lines at `level`. Writes to stdout are asynchronous: lines logged in
 * one event-loop turn go out in one write, so a request line does not cost a system call on
 * the request's path. pino flushes what is pending when the process exits. Every line is
 * scrubbed (log-scrub.ts): credential members of what is logged, then the written line.
 */
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
      // The line as written: message, bindings and serialised error included.
      hooks: { streamWrite: (line) => scrub.text(line) },
    },
    options.format === 'pretty' ? pretty(options.destination) : (options.destination ?? pino.destination({ dest: 1, sync: false })),
  );
}

/**
 * pino-pretty's stream. Loaded only here, with LOG_FORMAT=pretty: with its dependencies it is
 * about 10 MB of every instance's memory that JSON logs never use (issue 11, P6).
 */
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
