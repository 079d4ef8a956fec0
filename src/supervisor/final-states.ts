/**
 * Final states the state database could not store when a job ended (disk full, a lock…):
 * kept here, served from here, and stored by a retry every second, so an exit never throws
 * out of the exit handler (it crashed the service) and is never forgotten while the service
 * runs. What is still refused at shutdown stays `running` in the database, and the next
 * start marks it lost (README, "Generation jobs").
 */
import type { JobRecord, JobsRepo } from '../state/jobs-repo.js';

/** The columns a job's end writes (JobsRepo.finish). */
export type JobFinish = Parameters<JobsRepo['finish']>[1];

/** Retry period of refused final states, ms. */
const RETRY_MS = 1000;

export class FinalStates {
  private readonly unsaved = new Map<string, { rec: JobRecord; fin: JobFinish }>();
  private retry: NodeJS.Timeout | undefined;

  constructor(private readonly jobs: JobsRepo) {}

  /** Stores a job's final state, or keeps it for the retry when the database refuses it. */
  save(proposalId: string, rec: JobRecord, fin: JobFinish): void {
    try {
      this.jobs.finish(proposalId, fin);
    } catch {
      this.unsaved.set(proposalId, { rec, fin });
      this.schedule();
    }
  }

  /** The record of a job whose final state is still unsaved, if any. */
  get(proposalId: string): JobRecord | undefined {
    return this.unsaved.get(proposalId)?.rec;
  }

  /** Final states waiting for the database. */
  get pending(): number {
    return this.unsaved.size;
  }

  /** Shutdown: one last try; what is still refused stays unsaved, with no retry scheduled. */
  flush(): void {
    this.cancelRetry();
    if (this.unsaved.size > 0) this.storeUnsaved();
    this.cancelRetry();
  }

  /** Stores the kept final states; what still fails waits for the next try. */
  private storeUnsaved(): void {
    for (const [id, { fin }] of this.unsaved) {
      try {
        this.jobs.finish(id, fin);
        this.unsaved.delete(id);
      } catch {
        break; // the database still refuses: all of them wait
      }
    }
    if (this.unsaved.size > 0) this.schedule();
  }

  private schedule(): void {
    if (this.retry !== undefined) return;
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.storeUnsaved();
    }, RETRY_MS);
    this.retry.unref();
  }

  private cancelRetry(): void {
    clearTimeout(this.retry);
    this.retry = undefined;
  }
}
