/**
 * The state database's WAL checkpoint, as a task of the service's housekeeping thread (the
 * process worker's, src/process/housekeeping-thread.ts: one thread for both, issue 11, P6; run by
 * checkpointer.ts). The thread keeps its own connection to the database between tasks and runs
 * a PASSIVE checkpoint, which never waits for readers or writers: the main thread's commits go
 * on meanwhile, and the /proc tasks sharing the thread wait for the copy only.
 */
import Database, { type Db } from './binding.js';

/** One checkpoint of `file`; with `close`, the thread's connection is closed after it. */
export interface CheckpointTask {
  readonly file: string;
  readonly close?: boolean;
}

/** What a checkpoint did: `error` is the reason it failed (the database cannot be opened, I/O). */
export type CheckpointResult = { readonly ok: true } | { readonly ok: false; readonly error: string };

/**
 * How long the connection waits for a lock at opening. A checkpoint that cannot run now runs at
 * the next tick; the /proc tasks sharing the thread should not wait seconds for it.
 */
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
