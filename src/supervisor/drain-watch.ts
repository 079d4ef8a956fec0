/**
 * The end of a job's output after its exit (issue 12, P7): its pipes are read until they end,
 * however long that takes while bytes still come or wait to be framed; they are given up only
 * when nothing comes for `idleMs` while nothing waited (not while backpressure held the
 * output, nor while lines waited for their turn of the framing budget).
 *
 * Once the tool exited and its tree was swept, the pipes end when their buffers are read,
 * unless a process outside the tree still holds one (a daemon that shed the job's mark): the
 * idle bound is for that case. It used to count from the exit whatever happened, and a service
 * behind a storm (its pipes full, lines still coming) destroyed pipes with lines in them.
 */

/**
 * Resolves once `drained` resolves. When `progress()` has not moved for `idleMs` of time while
 * not `busy()`, calls `giveUp` (which must end the streams) and waits for `drained` still.
 * @param progress bytes read so far (any number that grows with them).
 * @param busy true while output is held or waits in the framing: the silence is ours, not the pipe's.
 */
export async function untilDrained(drained: Promise<unknown>, progress: () => number, busy: () => boolean, idleMs: number, giveUp: () => void): Promise<void> {
  let last = progress();
  let idle = 0;
  const step = Math.min(idleMs, 250);
  const timer = setInterval(() => {
    const now = progress();
    if (now !== last || busy()) {
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
