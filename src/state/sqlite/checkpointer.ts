/**
 * Runs the state database's WAL checkpoints off the main thread. Left to SQLite, every ~1000
 * pages a commit on the main thread copies the WAL back into the database file and syncs it:
 * about half the cost of storing an event. Here a separate connection checkpoints on a timer
 * instead (PASSIVE: it never blocks the main thread's commits), and the main connection's
 * own threshold stays as a backstop (db.ts). The checkpoints are tasks of the service's
 * housekeeping thread (checkpoint-task.ts), not a thread of their own: each thread costs about
 * 11 MB of memory (issue 11, P6).
 */
import type { CheckpointResult, CheckpointTask } from './checkpoint-task.js';

/** Runs a checkpoint task on the housekeeping thread (HousekeepingThread.runTask with the compiled checkpoint-task.js). */
export type CheckpointRunner = (task: CheckpointTask) => Promise<CheckpointResult>;

export class Checkpointer {
  private readonly timer: NodeJS.Timeout;
  private errors = 0;
  /** The checkpoint running now, if any: a tick never queues a second one behind it. */
  private running: Promise<void> | null = null;
  private stopped: Promise<void> | null = null;

  /**
   * Starts the timer.
   * @param file the state database.
   * @param run runs a task on the housekeeping thread.
   * @param intervalMs time between checkpoints.
   */
  constructor(
    private readonly file: string,
    private readonly run: CheckpointRunner,
    intervalMs = 500,
  ) {
    this.timer = setInterval(() => {
      this.running ??= this.once().finally(() => (this.running = null));
    }, intervalMs);
    this.timer.unref();
  }

  /** Checkpoints that failed (reported by the system status). */
  get failures(): number {
    return this.errors;
  }

  /** A last checkpoint, then the thread's connection closes (call before the main one closes). Idempotent. */
  stop(): Promise<void> {
    this.stopped ??= (async () => {
      clearInterval(this.timer);
      await this.running;
      await this.once(true);
    })();
    return this.stopped;
  }

  private async once(close = false): Promise<void> {
    try {
      const result = await this.run({ file: this.file, ...(close ? { close } : {}) });
      if (!result.ok) this.errors++;
    } catch {
      // The thread is gone (closed, or died and not yet replaced): the backstop threshold holds.
      this.errors++;
    }
  }
}
