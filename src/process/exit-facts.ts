/** How a process ended, with execa's names (style.md): `exitCode`, `signal`, `isTerminated`, `rc`. */
import os from 'node:os';

export interface ExitFacts {
  /** The code it exited with; null when a signal ended it. */
  readonly exitCode: number | null;
  /** The signal that ended it; null when it exited by itself. */
  readonly signal: NodeJS.Signals | null;
  /** True when a signal ended it. */
  readonly isTerminated: boolean;
  /** The exit code, or 128 + the signal's number (as shells report it). */
  readonly rc: number;
}

/**
 * The facts of a child's `exit` event (Node passes either a code or a signal).
 * @param code the exit code, or null; @param signal the signal's name, or null.
 */
export function exitFactsOf(code: number | null, signal: NodeJS.Signals | null): ExitFacts {
  const n = signal ? (os.constants.signals[signal] ?? 0) : 0;
  return { exitCode: code, signal, isTerminated: code === null && signal !== null, rc: code ?? 128 + n };
}
