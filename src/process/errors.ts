/** Errors of managed child processes (src/process), with their stable codes (issue 11, item 3). */
import { ServiceError } from '../errors/index.js';

/** The codes of managed processes' errors. */
export type ProcessErrorCode = 'spawn_refused';

/**
 * The operating system refused to start the program (no pid); nothing runs (code
 * `spawn_refused`; jobs and terminals wrap it in their own error, with it as `cause`).
 *
 * Node reports most refusals (ENOENT, EACCES, EAGAIN, EMFILE, ENFILE) as an `error` event on the
 * next tick, after `spawn` returned without a pid: `errno` and `cause` are then filled in, the
 * message names the errno, and `settled` resolves. A refusal Node throws at once is known from
 * the start.
 */
export class ProcessSpawnError extends ServiceError<'spawn_refused'> {
  override name = 'ProcessSpawnError';
  /** The errno code (`ENOENT`, `EACCES`, `EAGAIN`…), once known. */
  errno: string | undefined;
  /** Resolves once the refusal's own error is known (or was never reported). */
  readonly settled: Promise<void>;

  /**
   * @param file the program that was refused.
   * @param refusal Node's error (an errno exception), or a promise of it (undefined when Node
   *   reported none).
   */
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
