/** Jobs run at CONSOLE_JOB_NICE, process and autogroup, so a storm of jobs cannot take the console's CPU; terminals keep the service's (a person types there). */
import type { BirthPriority } from '../process/group-nice.js';
import { lowerPriority, type HousekeepingThread } from '../process/index.js';

/** Figures for the system status (`jobs.priority`). */
export interface JobPriorityStats {
  /** CONSOLE_JOB_NICE (0: jobs run at the service's priority). */
  readonly nice: number;
  /** Jobs whose priority (and autogroup's, where there are autogroups) was lowered. */
  readonly lowered: number;
  /** Jobs the system did not let us lower (or that ended first). */
  readonly refused: number;
}

export class JobPriority {
  private lowered = 0;
  private refused = 0;

  /** @param nice CONSOLE_JOB_NICE, 0..19. */
  constructor(
    private readonly procs: HousekeepingThread,
    readonly nice: number,
  ) {}

  /**
   * Lowers a new job's priority, returning at once (rate-limited group changes retry while `alive()`). `atBirth`:
   * what the spawn helper did right after the exec; only what it could not do is done here (a refused process
   * nice, or an autogroup change the kernel's rate limit put off).
   */
  lower(pid: number, alive: () => boolean, atBirth: BirthPriority | null = null): void {
    if (this.nice === 0) return;
    if (atBirth?.process === true && atBirth.group !== 'again') {
      if (atBirth.group === 'refused') this.refused++;
      else this.lowered++;
      return;
    }
    void lowerPriority(this.procs, pid, this.nice, alive).then((o) => {
      if (o.process && o.group !== false) this.lowered++;
      else this.refused++;
    });
  }

  stats(): JobPriorityStats {
    return { nice: this.nice, lowered: this.lowered, refused: this.refused };
  }
}
