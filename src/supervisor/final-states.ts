/**
 * Final states of jobs, stored once the job ended. Each is kept here, and served from here,
 * until the state store has it; one the store refuses (disk full, a lock, the database away)
 * is stored by a retry every second, so an exit never throws
 * out of the exit handler (it crashed the service) and is never forgotten while the service
 * runs. What is still refused at shutdown stays `running` in the database, and the next
 * start marks it lost (README, "Generation jobs").
 */
import type { JobRecord } from '../state/jobs-repo.js';
import type { JobFinish, JobStore } from '../state/state-store.js';

export type { JobFinish };

/** Retry period of refused final states, ms. */
const RETRY_MS = 1000;

export class FinalStates {
  /** In the order the jobs ended, which is the order they are stored in. */
  private readonly unsaved = new Map<string, { rec: JobRecord; fin: JobFinish }>();
  private retry: NodeJS.Timeout | undefined;
  /** The pass storing the kept final states, while one runs. */
  private storing: Promise<void> | undefined;

  constructor(private readonly jobs: JobStore) {}

  /** Stores a job's final state; kept (and retried) until the store has it. Never throws. */
  save(proposalId: string, rec: JobRecord, fin: JobFinish): void {
    this.unsaved.set(proposalId, { rec, fin });
    if (this.retry === undefined) this.store();
  }

  /** The record of a job whose final state is not stored yet, if any. */
  get(proposalId: string): JobRecord | undefined {
    return this.unsaved.get(proposalId)?.rec;
  }

  /** Final states waiting for the state store. */
  get pending(): number {
    return this.unsaved.size;
  }

  /** Shutdown: one last try; what is still refused stays unsaved, with no retry scheduled. */
  async flush(): Promise<void> {
    this.cancelRetry();
    await this.storing;
    if (this.unsaved.size > 0) await this.store();
    this.cancelRetry();
  }

  /** Starts a pass over the kept final states unless one runs (it takes the new ones too). */
  private store(): Promise<void> {
    this.storing ??= this.storeUnsaved().finally(() => {
      this.storing = undefined;
    });
    return this.storing;
  }

  /** Stores the kept final states in order; once the store refuses one, all wait for the retry. */
  private async storeUnsaved(): Promise<void> {
    for (const [id, entry] of this.unsaved) {
      try {
        await this.jobs.finish(id, entry.fin);
      } catch {
        this.schedule();
        return;
      }
      // A job saved again meanwhile keeps its newer entry for the next pass.
      if (this.unsaved.get(id) === entry) this.unsaved.delete(id);
    }
  }

  private schedule(): void {
    if (this.retry !== undefined) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      void this.store();
    }, RETRY_MS);
    this.retry.unref();
  }

  private cancelRetry(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
  }
}
