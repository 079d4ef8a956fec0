/**
 * The WAL checkpoint as a task of the housekeeping thread (src/process/housekeeping-thread.ts), with its own
 * connection kept between tasks. PASSIVE never waits for readers or writers, so commits go on meanwhile.
 */
import Database, { type Db } from './binding.js';

/** One checkpoint of `file`; with `close`, the thread's connection is closed after it. */
export interface CheckpointTask {
  readonly file: string;
  readonly close?: boolean;
}

/** What a checkpoint did: `error` is the reason it failed (the database cannot be opened, I/O). */
export type CheckpointResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/** Lock wait at opening: a checkpoint that cannot run now runs next tick; /proc tasks sharing the thread must not wait. */
const BUSY_TIMEOUT_MS = 250;

let open: { readonly file: string; readonly db: Db } | null = null;

function connection(file: string): Db {
  if (open !== null && open.file !== file) close();
  if (open === null) {
    const db = new Database(file, { fileMustExist: true });
    try {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      db.pragma('wal_autocheckpoint = 0');
    } catch (err) {
      db.close();
      throw err;
    }
    open = { file, db };
  }
  return open.db;
}

function close(): void {
  open?.db.close();
  open = null;
}

/** The task (Piscina's default export). Never throws: a failure is its result. */
export default function checkpoint(task: CheckpointTask): CheckpointResult {
  try {
    connection(task.file).pragma('wal_checkpoint(PASSIVE)');
    return { ok: true };
  } catch (err) {
    return { ok: false, error: (err as Error).message };
  } finally {
    if (task.close === true) close();
  }
}
