/**
 * The end of a job's output after its exit (issue 12, P7): its pipes are read until they end,
 * however long that takes while lines are still coming; they are given up only when nothing
 * comes for `idleMs` while the service was reading them (not while backpressure held them).
 *
 * Once the tool exited and its tree was swept, the pipes end when their buffers are read,
 * unless a process outside the tree still holds one (a daemon that shed the job's mark): the
 * idle bound is for that case. It used to count from the exit whatever happened, and a service
 * behind a storm (its pipes full, lines still coming) destroyed pipes with lines in them.
 */

/**
 * Resolves once `drained` resolves. When `progress()` has not moved for `idleMs` of time not
 * `held()`, calls `giveUp` (which must end the streams) and waits for `drained` still.
 * @param progress lines delivered so far (any number that grows with them).
 */
export async function untilDrained(drained: Promise<unknown>, progress: () => number, held: () => boolean, idleMs: number, giveUp: () => void): Promise<void> {
  let last = progress();
  let idle = 0;
  const step = Math.min(idleMs, 250);
  const timer = setInterval(() => {
    const now = progress();
    if (now !== last || held()) {
      last = now;
      idle = 0;
      return;
    }
    idle += step;
    if (idle >= idleMs) {
      clearInterval(timer);
      giveUp();
    }
  }, step);
  try {
    await drained;
  } finally {
    clearInterval(timer);
  }
}
