/** The calling thread's kernel id and nice value (Linux schedules threads, and keeps a nice value per thread). */
import fs from 'node:fs';
import os from 'node:os';

/** Sets the calling thread's nice value (0 leaves it). @returns the value now in force, or null where unknown (refused, not Linux). */
export function lowerOwnPriority(value: number): number | null {
  try {
    // Pid 0 is the calling thread on Linux: the process's other threads keep theirs.
    if (value > 0) os.setPriority(0, value);
    return os.getPriority(0);
  } catch {
    return null;
  }
}

/** The calling thread's kernel id (Linux), for ps, top and /proc/<pid>/task; null elsewhere. */
export function ownThreadId(): number | null {
  try {
    return Number(fs.readlinkSync('/proc/thread-self').split('/').pop());
  } catch {
    return null;
  }
}
