/**
 * The outcome of reading a file of the engine store (read-store-file.ts, store-json.ts): the
 * value, no such file, or a problem that says what is wrong without quoting the file.
 */

/** Why a store file cannot be used. Never holds the file's contents, nor a path beyond the store. */
export interface StoreFileProblem {
  /**
   * `file`: the file itself cannot be used (not a regular file, outside its folder, too large,
   * an I/O error); `content`: it was read, but is not usable JSON (syntax, depth).
   */
  readonly level: 'file' | 'content';
  /** What is wrong, e.g. `not a regular file (a named pipe)`. */
  readonly why: string;
  /** What to do about it, e.g. `fix the JSON syntax`. */
  readonly fix: string;
}

/** The outcome of a read: the value, no such file (or folder), or a problem. */
export type StoreRead<T> =
  | { readonly kind: 'ok'; readonly value: T }
  | { readonly kind: 'absent' }
  | { readonly kind: 'problem'; readonly problem: StoreFileProblem };

/** A problem outcome. */
export function problem(level: StoreFileProblem['level'], why: string, fix: string): StoreRead<never> {
  return { kind: 'problem', problem: { level, why, fix } };
}
