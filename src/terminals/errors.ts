/**
 * Why a terminal could not be started (api-decisions.md, "Service routes with partial shape":
 * Terminal). The HTTP layer answers each with 503 and the message as detail.
 */

/** The terminal program (TTYD_BIN) is not an executable file, or not on PATH. */
export class TerminalProgramMissingError extends Error {
  override name = 'TerminalProgramMissingError';
}

/** Every port of the configured range is taken (by our terminals or by other programs). */
export class TerminalPortsExhaustedError extends Error {
  override name = 'TerminalPortsExhaustedError';
}

/** The program was started but exited before it accepted a connection, or the service is stopping. */
export class TerminalStartError extends Error {
  override name = 'TerminalStartError';
}
