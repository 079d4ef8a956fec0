/**
 * The event writer thread (event-writer.ts): appends to the event log on a connection of its own, one at a time,
 * as the main thread planned them (event-append.ts), and makes the appended events' frames (in the buffer shared
 * with the main thread, or transferred with the reply when too large for it). Each reply is posted, then the append's number is stored in
 * the shared word 0 and notified, so the main thread can wait for it without its event loop; word 1 is set when
 * the thread ends.
 */
import { workerData, type MessagePort } from 'node:worker_threads';
import { packEventFrames } from '../../bus/frames.js';
import { lowerOwnPriority, ownThreadId } from '../../process/own-thread.js';
import Database from './binding.js';
import { setWriterSettings } from './connection-settings.js';
import { AppendExecutor, type AppendPlan } from './event-append.js';
import { unpackRows, type WireRows } from './append-wire.js';
import type { WriterReply, WriterSetup } from './event-writer.js';

const setup = workerData as WriterSetup & { readonly port: MessagePort; readonly done: SharedArrayBuffer; readonly frames: SharedArrayBuffer };
const done = new Int32Array(setup.done);
const port = setup.port;

// Word 1 tells a main thread waiting in drain() that no reply will come: an uncaught error ends the thread.
process.on('exit', () => {
  Atomics.store(done, 1, 1);
  Atomics.notify(done, 0);
});

const nice = lowerOwnPriority(setup.nice);
const db = new Database(setup.file, { fileMustExist: true });
// Per connection: the main one migrated the file and set WAL, which stays.
// As the main connection's (db.ts); the checkpoints are the checkpointer's, not this thread's commits'.
setWriterSettings(db);
const executor = new AppendExecutor(db);

port.postMessage({ seq: 0, tid: ownThreadId(), nice } satisfies WriterReply);

port.on('message', (m: { seq: number; plan: AppendPlan; rows: WireRows } | { close: true }) => {
  if ('close' in m) {
    db.close();
    port.close();
    return;
  }
  let reply: WriterReply;
  let frames: ArrayBuffer | 'shared' | null = null;
  try {
    const rows = unpackRows(m.rows);
    const outcome = executor.run(m.plan, rows);
    try {
      // Each stored event's Server-Sent Events frame, made here: the main thread copies bytes instead of encoding.
      // In the shared buffer (read on the main thread before the next append comes), else transferred.
      frames = packEventFrames(rows.ids, rows.data, setup.frames) ?? 'shared';
    } catch {
      // Committed all the same (not an append's error, which would be retried): the main thread frames them.
    }
    reply = { seq: m.seq, outcome, frames };
  } catch (err) {
    // Statements of tables a failed append dropped or made are not used again.
    executor.forget();
    const e = err as { message?: string; code?: string };
    reply = { seq: m.seq, error: { message: e?.message ?? String(err), code: typeof e?.code === 'string' ? e.code : null } };
  }
  port.postMessage(reply, frames instanceof ArrayBuffer ? [frames] : []);
  Atomics.store(done, 0, m.seq);
  Atomics.notify(done, 0);
});
