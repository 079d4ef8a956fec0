/**
 * Runs the state database's WAL checkpoints on a worker thread. Left to SQLite, every ~1000
 * pages a commit on the main thread copies the WAL back into the database file and syncs it:
 * about half the cost of storing an event. Here a separate connection checkpoints on a timer
 * instead (PASSIVE: it never blocks the main thread's commits), and the main connection's
 * own threshold stays as a backstop (db.ts).
 */
import { once } from 'node:events';
import path from 'node:path';
import { Worker } from 'node:worker_threads';


export class Checkpointer {
  private readonly worker: Worker;
  private errors = 0;
  private stopped = false;
  private exited = false;

  /**
   * @param file the state database.
   * @param workerFile the compiled checkpoint worker (src/main/paths.ts: WORKER_FILES.checkpoint).
   * @param intervalMs time between checkpoints.
   */
  constructor(file: string, workerFile: string, intervalMs = 500) {
    this.worker = new Worker(workerFile, { workerData: { file, intervalMs } });
    this.worker.on('message', (m: { error?: string }) => {
      if (m.error) this.errors++;
    });
    this.worker.on('error', () => this.errors++);
    this.worker.on('exit', () => (this.exited = true));
    this.worker.unref();
  }

  /** Checkpoints that failed (reported by the system status). */
  get failures(): number {
    return this.errors;
  }

  /** A last checkpoint, then the worker's connection closes (before the main one). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    // A worker that already ended (it could not open the database) has nothing to finish.
    if (this.exited) return;
    this.worker.ref();
    const exited = once(this.worker, 'exit');
    const finished = new Promise<void>((resolve) => {
      this.worker.on('message', (m: { stopped?: number }) => {
        if (m.stopped !== undefined) resolve();
      });
    });
    this.worker.postMessage({ stop: true });
    await Promise.race([finished, exited]);
    await this.worker.terminate();
  }
}
