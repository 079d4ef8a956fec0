/**
 * The base of every error the service raises (issue 11, item 3; style.md, "Errors in one
 * catalogue"). A leaf module: it imports nothing of the service, so every folder may use it
 * without an import cycle.
 *
 * Each folder keeps its own error classes in its `errors.ts`, each with a stable `code`
 * (snake_case, e.g. `project_not_found`), and passes the error it stands for as `cause`. What
 * a code means over HTTP (status, headers, body) is decided in one table, src/http/errors.ts;
 * no other module turns an error into a status.
 */

/** Options of a {@link ServiceError}. */
export interface ServiceErrorOptions {
  /** The underlying error (a SqliteError, a Node errno exception…), kept for logs. */
  readonly cause?: unknown;
  /** Seconds a client should wait before trying again (sent as `Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/**
 * Marks an error as one of the service's. Set by {@link ServiceError}, and by the one error
 * that cannot extend it: DecisionValueError, a RangeError as the spec's ValueError is.
 */
export const SERVICE_ERROR: unique symbol = Symbol.for('console-backend.service-error');

/** What the catalogue reads of an error of the service (a {@link ServiceError}, or a marked error). */
export interface ServiceErrorLike extends Error {
  readonly [SERVICE_ERROR]: true;
  /** Stable, snake_case; the `code` member of the error answer. */
  readonly code: string;
  /** The answer's `detail`: a string (the message by default), or a structured detail. */
  readonly detail?: unknown;
  readonly retryAfterSeconds?: number | undefined;
  /**
   * Resolves once every fact of the error is known, for facts the runtime reports after the
   * throw (a refused spawn's errno comes on the next tick); the answer waits for it.
   */
  readonly settled?: Promise<unknown> | undefined;
}

/**
 * An error of the service with a stable code.
 * @typeParam C the code: each folder's `errors.ts` lists its codes as a type, and the HTTP
 *   catalogue must map every one of them (a missing entry is a compile error there).
 */
export class ServiceError<C extends string = string> extends Error implements ServiceErrorLike {
  override name = 'ServiceError';
  readonly [SERVICE_ERROR] = true as const;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: C,
    message: string,
    options: ServiceErrorOptions = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  /** The answer's `detail`; the message unless a subclass has a structured one. */
  get detail(): unknown {
    return this.message;
  }
}

/** Whether `err` is one of the service's errors (it carries a code the catalogue maps). */
export function isServiceError(err: unknown): err is ServiceErrorLike {
  return err instanceof Error && (err as Partial<ServiceErrorLike>)[SERVICE_ERROR] === true && typeof (err as { code?: unknown }).code === 'string';
}
