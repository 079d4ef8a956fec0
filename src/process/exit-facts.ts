/** How a process ended, with execa's names (style.md): `exitCode`, `signal`, `isTerminated`, `rc`. */
import os from 'node:os';

export interface ExitFacts {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly isTerminated: boolean;
  /** The exit code, or 128 + the signal's number (as shells report it). */
  readonly rc: number;
}

export function exitFactsOf(code: number | null, signal: NodeJS.Signals | null): ExitFacts {
  const n = signal ? (os.constants.signals[signal] ?? 0) : 0;
  return { exitCode: code, signal, isTerminated: code === null && signal !== null, rc: code ?? 128 + n };
}
