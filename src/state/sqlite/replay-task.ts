/**
 * The replay thread's read (replay-thread.ts): stored events' Server-Sent Events frames, made by SQLite and packed
 * into one buffer here, which is transferred to the main thread, not copied. Its own read-only connection is kept
 * between reads; in WAL mode it reads what was committed, beside the main connection's writes.
 */
import { move } from 'piscina';
import { lowerOwnPriority, ownThreadId } from '../../process/own-thread.js';
import Database, { type Db, type Statement } from './binding.js';
import { packFrames } from '../../bus/frames.js';
import { FRAME_SQL } from './event-reads.js';
import { SEGMENT_PREFIX } from './event-segments.js';

/** One read: events with `sinceId < id <= upTo`, at most `limit`, from the segment `tables` (oldest first). */
export interface ReplayTask {
  readonly file: string;
  /** CONSOLE_SSE_REPLAY_THREAD_NICE: set by {@link start}, and by the first read of a thread Piscina started again. */
  readonly nice: number;
  readonly tables: readonly string[];
  readonly sinceId: number;
  readonly limit: number;
  readonly upTo: number;
}

/** A segment table's name, as event-segments.ts makes them: the only text put into the statements. */
const SEGMENT_TABLE = new RegExp(`^${SEGMENT_PREFIX}[1-9][0-9]*$`);

/** Statements kept (one per segment table read): a few more than the segments a log holds (event-log.ts). */
const MAX_STATEMENTS = 16;

/** Lock wait: a read is never blocked by writers in WAL mode but for a moment at opening. */
const BUSY_TIMEOUT_MS = 1000;

/** The thread, as the system status shows it: its kernel id and nice value (null where unknown). */
export interface ReplayThreadInfo {
  readonly tid: number | null;
  readonly nice: number | null;
}

/** Whether this thread's nice value was set (Piscina starts a dead thread again, at the process's). */
let niceSet = false;

/**
 * Opens the connection to `file` (every descriptor it keeps is then open) and sets this thread's nice value
 * (CONSOLE_SSE_REPLAY_THREAD_NICE, below the main thread's). Piscina's named task `start`. @throws the database's error.
 */
export function start(task: { readonly file: string; readonly nice: number }): ReplayThreadInfo {
  const nice = lowerOwnPriority(task.nice);
  niceSet = true;
  try {
    connection(task.file);
  } catch (err) {
    throw plainError(`replay thread: opening ${task.file}`, err);
  }
  return { tid: ownThreadId(), nice };
}

/** A plain Error: the binding's own class reaches the main thread without its message. */
const plainError = (what: string, err: unknown): Error => new Error(`${what}: ${(err as Error).message}`);

let open: { readonly file: string; readonly db: Db; readonly selects: Map<string, Statement<unknown[]>> } | null = null;

function connection(file: string): NonNullable<typeof open> {
  if (open !== null && open.file !== file) {
    open.db.close();
    open = null;
  }
  if (open === null) {
    const db = new Database(file, { readonly: true, fileMustExist: true });
    try {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // A first read opens the write-ahead log and its index: every descriptor the connection keeps is open now.
      db.pragma('schema_version');
    } catch (err) {
      db.close();
      throw err;
    }
    open = { file, db, selects: new Map() };
  }
  return open;
}

function select(conn: NonNullable<typeof open>, table: string): Statement<unknown[]> {
  let stmt = conn.selects.get(table);
  if (stmt === undefined) {
    if (!SEGMENT_TABLE.test(table)) throw new Error(`not an event segment table: ${table}`);
    // Retention drops old segments and rotation names new ones: the statements of the dropped go with the rest.
    if (conn.selects.size >= MAX_STATEMENTS) conn.selects.clear();
    stmt = conn.db.prepare(`SELECT id, ${FRAME_SQL} FROM ${table} WHERE id > ? AND id <= ? ORDER BY id ASC LIMIT ?`).raw(true);
    conn.selects.set(table, stmt);
  }
  return stmt;
}

/**
 * The task (Piscina's default export). @returns the frames packed by packFrames (bus/frames.ts), transferred.
 * @throws the database's error (a segment dropped by retention meanwhile: "no such table"); the main thread then reads.
 */
export default function readReplay(task: ReplayTask): ArrayBuffer {
  if (!niceSet) {
    niceSet = true;
    lowerOwnPriority(task.nice);
  }
  const ids: number[] = [];
  const frames: string[] = [];
  let conn: NonNullable<typeof open> | null = null;
  try {
    conn = connection(task.file);
    for (const table of task.tables) {
      const left = task.limit - frames.length;
      if (left <= 0) break;
      for (const [id, frame] of select(conn, table).all(task.sinceId, task.upTo, left) as [number, string][]) {
        ids.push(id);
        frames.push(frame);
      }
    }
  } catch (err) {
    // A dropped table's statement is not used again.
    conn?.selects.clear();
    throw plainError(`replay read of ${task.file}${task.tables.length > 0 ? ` (${task.tables.join(', ')})` : ''}`, err);
  }
  return move(packFrames(ids, frames)) as unknown as ArrayBuffer;
}
