/**
 * Shared by the tests of managed processes (src/process) and of the trees of jobs and
 * terminals: real fixture processes, found in /proc by their mark.
 */
import { readProc, treeProcesses } from '../../src/process/proc-scan.js';
import type { Readable } from 'node:stream';
import type { ManagedSpawnOptions } from '../../src/process/index.js';

/** Ended, or a zombie (this container's PID 1 does not reap orphans). */
export function gone(pid: number): boolean {
  const p = readProc(pid);
  return p === null || p.state === 'Z';
}

/**
 * SIGKILLs every live process holding `mark` (an environment entry `NAME=value`), pass after
 * pass until none is left (50 at most): cleanup after a test, whatever its outcome.
 */
export async function killMarked(mark: string): Promise<void> {
  for (let pass = 0; pass < 50; pass++) {
    const left = treeProcesses(null, null, mark);
    if (left.length === 0) return;
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Resolves with the first line of `stream` that starts with `prefix`. */
export function lineStartingWith(stream: Readable, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    stream.setEncoding('utf8');
    const onData = (d: string) => {
      text += d;
      const line = text.split('\n').find((l, i, all) => i < all.length - 1 && l.startsWith(prefix));
      if (line !== undefined) {
        stream.off('data', onData);
        resolve(line);
      }
    };
    stream.on('data', onData);
    stream.once('end', () => reject(new Error(`no line starting with "${prefix}" in: ${text}`)));
  });
}

let marks = 0;
/** Marks handed out by {@link testSpawnOptions} and not yet cleaned up. */
const handedOut: string[] = [];

/** SIGKILLs every process of the marks handed out so far (an `afterEach`: nothing outlives its test). */
export async function killTestProcesses(): Promise<void> {
  for (const mark of handedOut.splice(0)) await killMarked(mark);
}

/**
 * Options for a test's managed process: PATH, and a mark of its own (`TEST_MARK=<n>-<pid>`):
 * the sweep after its exit kills every holder of the mark, so two processes never share one.
 */
export function testSpawnOptions(extra: Partial<ManagedSpawnOptions> = {}): ManagedSpawnOptions & { mark: string } {
  const value = `${++marks}-${process.pid}`;
  handedOut.push(`TEST_MARK=${value}`);
  return {
    stdout: 'pipe',
    stderr: 'ignore',
    sweep: { maxPasses: 100, maxMs: 5000 },
    ...extra,
    env: { PATH: process.env.PATH ?? '', TEST_MARK: value, ...extra.env },
    mark: `TEST_MARK=${value}`,
  };
}
