/**
 * Structured logs (pino): one JSON line per event worth an operator's attention.
 */
import { pino, type Logger } from 'pino';
import type { LogLevel } from './config.js';

export type { Logger } from 'pino';

/** A logger writing JSON lines to stdout at `level`. */
export function createLogger(level: LogLevel): Logger {
  return pino({ level, base: { service: 'console-backend' } });
}
