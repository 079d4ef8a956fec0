/**
 * Structured logs (pino): one JSON line per event worth an operator's attention.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger } from 'pino';

/**
 * A logger writing JSON lines to stdout at `level`. Writes are asynchronous: lines logged in
 * one event-loop turn go out in one write, so a request line does not cost a system call on
 * the request's path. pino flushes what is pending when the process exits.
 */
export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: { service: 'console-backend' } }, pino.destination({ dest: 1, sync: false }));
}
