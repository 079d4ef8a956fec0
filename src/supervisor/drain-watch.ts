/** A job's output after its exit is read until the pipes end: a daemon that shed the job's mark may keep a pipe open. */

/**
 * Resolves once `drained` does; after `idleMs` without `progress()` while not `busy()` (output held
 * or waiting for framing: the silence is ours), calls `giveUp`, which must end the streams.
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
