/**
 * Worker thread of the checkpointer (checkpointer.ts): its own connection to the state
 * database, running a PASSIVE WAL checkpoint on a timer. A passive checkpoint never waits
 * for readers or writers, so the main thread's commits go on meanwhile.
 */
import { parentPort, workerData } from 'node:worker_threads';
import Database from 'better-sqlite3';

const { file, intervalMs } = workerData as { file: string; intervalMs: number };
let db: Database.Database;
try {
  db = new Database(file, { fileMustExist: true });
  db.pragma('busy_timeout = 5000');
  db.pragma('wal_autocheckpoint = 0');
} catch (err) {
  // The main connection's backstop threshold keeps the WAL bounded without us.
  parentPort?.postMessage({ error: `checkpointer cannot open ${file}: ${(err as Error).message}` });
  process.exit(0);
}

let checkpoints = 0;
const run = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
    checkpoints++;
  } catch (err) {
    parentPort?.postMessage({ error: (err as Error).message });
  }
};
const timer = setInterval(run, intervalMs);

parentPort?.on('message', (msg: { stop?: boolean; now?: boolean }) => {
  if (msg.now) {
    run();
    parentPort?.postMessage({ checkpointed: checkpoints });
  }
  if (msg.stop) {
    clearInterval(timer);
    run();
    db.close();
    parentPort?.postMessage({ stopped: checkpoints });
  }
});
