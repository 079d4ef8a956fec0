// The supervisor's jobs as the routes read them (service-spec.md §Jobs): a job of this instance that is running,
// or ended with its final state not stored yet, is served live; every other from the state database.
import type { JobRecord } from '../state/records.js';
import type { JobQuery, StateStore } from '../state/state-store.js';
import type { RunningJob } from './running-job.js';

/** Reads over the supervisor's running and ending jobs and the stored ones. */
export class JobReads {
  /**
   * @param running the supervisor's running jobs, by proposal id (read, never changed here).
   * @param ending ended jobs whose final state the bus has not stored yet.
   * @param reportInstance cluster mode: records are served with their `instanceId` (`instanceId` is this instance's).
   */
  constructor(
    private readonly running: ReadonlyMap<string, RunningJob>,
    private readonly ending: ReadonlyMap<string, JobRecord>,
    private readonly jobs: StateStore['jobs'],
    private readonly instanceId: string,
    private readonly reportInstance: boolean,
  ) {}

  /** A job by proposal id: live figures while running, else the stored record. @throws the state store's error. */
  async get(proposalId: string): Promise<JobRecord | undefined> {
    const live = this.live(proposalId);
    if (live) return live;
    const stored = await this.jobs.get(proposalId);
    return stored && (this.live(proposalId) ?? this.served(stored));
  }

  /** Jobs newest first, running ones with live line counts. @throws the state store's error. */
  async list(limit: number, state?: string): Promise<JobRecord[]> {
    return (await this.jobs.list(limit, state)).map((r) => this.live(r.proposalId) ?? this.served(r));
  }

  /** The jobs matching `q` (filters, a page), newest first, running ones with live line counts. @throws the state store's error. */
  async search(q: JobQuery): Promise<JobRecord[]> {
    return (await this.jobs.search(q)).map((r) => this.live(r.proposalId) ?? this.served(r));
  }

  /** Running jobs with live figures (fenced ones are the judge's). */
  runningJobs(): JobRecord[] {
    return [...this.running.values()].filter((j) => !j.fenced).map((j) => j.record());
  }

  /** A job of this instance that is running, or ended with its final state not stored yet (fenced ones are the judge's). */
  private live(proposalId: string): JobRecord | undefined {
    const job = this.running.get(proposalId);
    const rec = (job !== undefined && !job.fenced ? job.record() : undefined) ?? this.ending.get(proposalId);
    if (!rec || !this.reportInstance) return rec;
    const withInstance: JobRecord & { instanceId: string } = { ...rec, instanceId: this.instanceId };
    return withInstance;
  }

  /** A stored job as the routes serve it: with its instance in cluster mode only. */
  private served(job: JobRecord & { instanceId?: string }): JobRecord {
    return this.reportInstance ? job : withoutOwner(job);
  }
}

/** A stored job as the routes serve it (the instance is cluster mode's, not part of the record). */
export function withoutOwner(job: JobRecord & { instanceId?: string }): JobRecord {
  const { instanceId: _owner, ...rec } = job;
  return rec;
}
