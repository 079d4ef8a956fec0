/**
 * Generation jobs run at a lower CPU priority than the service (issue 12, P7): CONSOLE_JOB_NICE
 * is given to each job's process and, under autogroup scheduling, to its session's group
 * (src/process/lower-priority.ts), so that a storm of jobs cannot take the CPU the console's
 * answers need. Terminals keep the service's priority: a person types in them.
 */
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

  /**
   * @param procs the process worker (autogroups are set there).
   * @param nice CONSOLE_JOB_NICE, 0..19.
   */
  constructor(
    private readonly procs: HousekeepingThread,
    readonly nice: number,
  ) {}

  /**
   * Lowers a new job's priority; returns at once (a group change the kernel rate-limits is
   * tried again in the background while `alive()`).
   * @param firstTry called once the first try of the group change has settled (at once when
   *   there is nothing to lower): the spawn pacer holds the next spawn until then.
   */
  lower(pid: number, alive: () => boolean, firstTry: () => void = () => {}): void {
    if (this.nice === 0) {
      firstTry();
      return;
    }
    void lowerPriority(this.procs, pid, this.nice, alive, firstTry).then((o) => {
      if (o.process && o.group !== false) this.lowered++;
      else this.refused++;
    });
  }

  stats(): JobPriorityStats {
    return { nice: this.nice, lowered: this.lowered, refused: this.refused };
  }
}
