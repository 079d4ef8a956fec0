/** Errors of managed child processes, with stable codes (service-spec.md §Errors). */
import { ServiceError } from '../errors/index.js';

/** The codes of managed processes' errors. */
export type ProcessErrorCode = 'spawn_refused';

/** The OS refused to start the program (code `spawn_refused`); most refusals arrive a tick later, filling `errno` and `cause` as `settled` resolves. */
export class ProcessSpawnError extends ServiceError<'spawn_refused'> {
  override name = 'ProcessSpawnError';
  /** The errno code (`ENOENT`, `EACCES`, `EAGAIN`…), once known. */
  errno: string | undefined;
  /** Resolves once the refusal's own error is known (or was never reported). */
  readonly settled: Promise<void>;

  constructor(
    readonly file: string,
    refusal: Error | Promise<Error | undefined>,
  ) {
    super('spawn_refused', `the operating system refused to start ${file}`);
    const learn = (err: Error | undefined) => {
      if (err === undefined) return;
      this.errno = (err as NodeJS.ErrnoException).code;
      this.cause = err;
      if (this.errno !== undefined) this.message = `the operating system refused to start ${file} (${this.errno})`;
    };
    if (refusal instanceof Promise) {
      this.settled = refusal.then(learn);
    } else {
      learn(refusal);
      this.settled = Promise.resolve();
    }
  }
}
