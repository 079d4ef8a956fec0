// The base of every service error (style.md, "Errors in one catalogue"); a leaf module any folder may import.

/** Options of a {@link ServiceError}. */
export interface ServiceErrorOptions {
  /** The underlying error (a SqliteError, a Node errno exception…), kept for logs. */
  readonly cause?: unknown;
  /** Seconds a client should wait before trying again (sent as `Retry-After`). */
  readonly retryAfterSeconds?: number;
}

/** Marks a service error; also set by DecisionValueError, a RangeError that cannot extend {@link ServiceError}. */
export const SERVICE_ERROR: unique symbol = Symbol.for('console-backend.service-error');

/** What the catalogue reads of an error of the service (a {@link ServiceError}, or a marked error). */
export interface ServiceErrorLike extends Error {
  readonly [SERVICE_ERROR]: true;
  /** Stable, snake_case; the `code` member of the error answer. */
  readonly code: string;
  /** The answer's `detail`: a string (the message by default), or a structured detail. */
  readonly detail?: unknown;
  readonly retryAfterSeconds?: number | undefined;
  /** Resolves when facts reported after the throw are known (a refused spawn's errno); the answer waits for it. */
  readonly settled?: Promise<unknown> | undefined;
}

/** An error of the service with a stable snake_case code; the HTTP catalogue must map every `C` (a compile error otherwise). */
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
