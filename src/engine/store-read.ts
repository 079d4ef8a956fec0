/** The outcome of reading an engine-store file: the value, absent, or a problem that never quotes the file. */

/** Why a store file cannot be used (`why`, `fix`); never its contents, nor a path beyond the store. */
export interface StoreFileProblem {
  /** `file`: unusable as a file (type, place, size, I/O); `content`: read but not usable JSON. */
  readonly level: 'file' | 'content';
  /** What is wrong, e.g. `not a regular file (a named pipe)`. */
  readonly why: string;
  /** What to do about it, e.g. `fix the JSON syntax`. */
  readonly fix: string;
}

/** The outcome of a read: the value, no such file (or folder), or a problem. */
export type StoreRead<T> = { readonly kind: 'ok'; readonly value: T } | { readonly kind: 'absent' } | { readonly kind: 'problem'; readonly problem: StoreFileProblem };

/** A problem outcome. */
export function problem(level: StoreFileProblem['level'], why: string, fix: string): StoreRead<never> {
  return { kind: 'problem', problem: { level, why, fix } };
}
