/** The dispatch tool's error: `exitCode` 2 is a caller mistake; anything else escaping exits 1. */
export class DispatchError extends Error {
  readonly exitCode: 1 | 2;

  constructor(message: string, options: { exitCode?: 1 | 2; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'DispatchError';
    this.exitCode = options.exitCode ?? 2;
  }
}

/** The exit code for any thrown value: a DispatchError's own, otherwise 1. */
export function exitCodeOf(error: unknown): 1 | 2 {
  return error instanceof DispatchError ? error.exitCode : 1;
}

/** A one-line message for any thrown value (newlines would split a progress line). */
export function messageOf(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/\s*\n\s*/g, ' ');
}
