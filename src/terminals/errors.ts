/** Terminal errors with stable codes (api-decisions.md §Service routes with partial shape); start failures answer 503: the service works, the terminal facility does not. */
import { ServiceError } from '../errors/index.js';
import type { ProcessSpawnError } from '../process/errors.js';

/** The codes of the terminals' errors. */
export type TerminalErrorCode = 'terminal_program_missing' | 'terminal_ports_exhausted' | 'terminal_start_failed' | 'terminal_not_running';

/** The terminal program (TTYD_BIN) is not an executable file, or not on PATH (code `terminal_program_missing`). */
export class TerminalProgramMissingError extends ServiceError<'terminal_program_missing'> {
  override name = 'TerminalProgramMissingError';
  constructor(message: string) {
    super('terminal_program_missing', message);
  }
}

/** Every port of the configured range is taken, by our terminals or by other programs (code `terminal_ports_exhausted`). */
export class TerminalPortsExhaustedError extends ServiceError<'terminal_ports_exhausted'> {
  override name = 'TerminalPortsExhaustedError';
  constructor(message: string) {
    super('terminal_ports_exhausted', message);
  }
}

/** Refused by the OS (the `cause`, `settled` once its errno is known), exited before accepting a connection, or the service is stopping. */
export class TerminalStartError extends ServiceError<'terminal_start_failed'> {
  override name = 'TerminalStartError';
  readonly settled: Promise<void> | undefined;
  constructor(message: string, options: { readonly cause?: ProcessSpawnError } = {}) {
    super('terminal_start_failed', message, options);
    const refusal = options.cause;
    if (refusal !== undefined) {
      const named = () => {
        if (refusal.errno !== undefined) this.message = `${message} (${refusal.errno})`;
      };
      named();
      this.settled = refusal.settled.then(named);
    }
  }
}

/** The project has no running terminal (code `terminal_not_running`). */
export class TerminalNotRunningError extends ServiceError<'terminal_not_running'> {
  override name = 'TerminalNotRunningError';
  constructor(readonly projectId: string) {
    super('terminal_not_running', `no running terminal for project ${projectId}`);
  }
}
