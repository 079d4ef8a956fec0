// WAL checkpoints off the main thread, where SQLite's own would copy the WAL back and sync inside a commit; a
// PASSIVE checkpoint on a timer never blocks commits. On the housekeeping thread, as each thread costs memory.
import type { CheckpointResult, CheckpointTask } from './checkpoint-task.js';

/** Runs a checkpoint task on the housekeeping thread (HousekeepingThread.runTask with the compiled checkpoint-task.js). */
export type CheckpointRunner = (task: CheckpointTask) => Promise<CheckpointResult>;

export class Checkpointer {
  private readonly timer: NodeJS.Timeout;
  private errors = 0;
  /** The checkpoint running now, if any: a tick never queues a second one behind it. */
  private running: Promise<void> | null = null;
  private stopped: Promise<void> | null = null;

  /** Starts the timer. @param run runs a task on the housekeeping thread. */
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
