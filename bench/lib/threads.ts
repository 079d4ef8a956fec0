/**
 * The CPU a service's threads spent over a stretch of a benchmark, by thread (bench/RESULTS.md, "CPU per line"):
 * from /proc/<pid>/task/<tid>/stat (user + system, clock ticks of 10 ms), the service's own threads named from its
 * system status (the job I/O and event writer threads' tids), the others by their kernel name. On Node.js 20 every
 * other thread is `node`: V8's platform threads (the collectors' helpers), libuv's pool, and the service's other
 * worker threads (housekeeping, the worker pool, the replay thread) together. Linux only; elsewhere a snapshot is empty.
 */
import fs from 'node:fs';

const TICK_S = 0.01;

/** CPU seconds (user + system) in a /proc stat file. @throws when it cannot be read (the task ended). */
export function cpuSeconds(statFile: string): number {
  return statSeconds(fs.readFileSync(statFile, 'utf8'));
}

/** CPU seconds (user + system) in the text of a /proc stat file (fields 14 and 15, after the name in parentheses). */
function statSeconds(stat: string): number {
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_S;
}

/** Each thread of a process at one moment: its CPU seconds by tid, with the name it is reported under. */
export type ThreadCpu = Map<number, { readonly name: string; readonly s: number }>;

/** The tids a service's system status names (absent in builds from before its threads). */
interface StatusTids {
  readonly jobs?: { readonly thread?: { readonly tid: number | null } };
  readonly database?: { readonly eventWriter?: { readonly tid: number | null } };
}

/** The CPU seconds of each thread of `pid` now; `url`'s system status names the service's own threads. */
export async function threadCpu(pid: number, url?: string): Promise<ThreadCpu> {
  const named = new Map<number, string>([[pid, 'main']]);
  if (url !== undefined) {
    const s = (await (await fetch(`${url}/api/system-status`)).json()) as StatusTids;
    if (s.jobs?.thread?.tid) named.set(s.jobs.thread.tid, 'job I/O');
    if (s.database?.eventWriter?.tid) named.set(s.database.eventWriter.tid, 'event writer');
  }
  const out: ThreadCpu = new Map();
  let tids: string[] = [];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      out.set(Number(tid), { name: named.get(Number(tid)) ?? stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), s: statSeconds(stat) });
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return out;
}

/** The CPU each name's threads spent from `before` to `after`, in µs per `units` (e.g. lines), the largest first. */
export function cpuPerUnit(before: ThreadCpu, after: ThreadCpu, units: number): [string, number][] {
  const byName = new Map<string, number>();
  for (const [tid, t] of after) {
    const prior = before.get(tid);
    byName.set(t.name, (byName.get(t.name) ?? 0) + t.s - (prior?.name === t.name ? prior.s : 0));
  }
  return [...byName]
    .filter(([, s]) => s > 0)
    .map(([name, s]): [string, number] => [name, (s / units) * 1e6])
    .sort((a, b) => b[1] - a[1]);
}

/** `main 2.31, event writer 2.02, …` (µs per unit, two decimals). */
export const cpuSplitText = (split: readonly [string, number][]): string => split.map(([n, us]) => `${n} ${us.toFixed(2)}`).join(', ');
