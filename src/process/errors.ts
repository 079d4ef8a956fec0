/** Errors of managed child processes (src/process). */

/** The operating system refused to start the program (no pid); nothing runs. */
export class ProcessSpawnError extends Error {
  override name = 'ProcessSpawnError';
}
