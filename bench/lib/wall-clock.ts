/**
 * Wall-clock time in ms with sub-millisecond steps, comparable across processes. Node's
 * `performance.timeOrigin` is taken once at start-up from two clock reads; a process that is
 * descheduled between them (a job started at a low CPU priority, on a busy machine) gets an
 * origin off by that pause, and its stamps look late or early by as much. The origin is
 * taken here from several reads of `Date.now()` against `performance.now()`, keeping the
 * largest difference (Date.now() truncates to the millisecond), plus half a millisecond.
 */
function calibrate(): number {
  let best = -Infinity;
  for (let i = 0; i < 50; i++) best = Math.max(best, Date.now() - performance.now());
  return best + 0.5;
}

const origin = calibrate();

/** Now, in ms since the epoch. */
export const wallNow = (): number => origin + performance.now();

/** The wall-clock time of a `performance.now()` reading. */
export const wallAt = (perfNow: number): number => origin + perfNow;
