/** Errors of the state database (src/state). */

/** Thrown when the state database cannot be opened or migrated; the message names the path. */
export class StateDbError extends Error {
  override name = 'StateDbError';
}
