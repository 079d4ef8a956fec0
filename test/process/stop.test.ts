/**
 * Stopping a managed process (style.md, practice 5): SIGTERM to its group
 * and to its tree captured first, SIGKILL after the grace period when it ignores SIGTERM; the
 * sweep after its exit ends what the SIGTERM left. Real fixture processes.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HousekeepingThread, spawnManaged } from '../../src/process/index.js';
import { fixture } from '../helpers/service.js';
import { gone, killTestProcesses, lineStartingWith, testSpawnOptions } from './helpers.js';
import { WORKER_FILES } from '../../src/config/paths.js';

const procs = new HousekeepingThread(WORKER_FILES.proc);
afterAll(() => procs.close());
// Whatever the outcome, no process of a test outlives it.
afterEach(killTestProcesses);

const start = (file: string) => spawnManaged(procs, process.execPath, [fixture(file)], testSpawnOptions());

describe('stop', () => {
  it('ends a process that honours SIGTERM with SIGTERM (rc 143); nothing is left to sweep', async () => {
    const p = start('forever.mjs');
    await lineStartingWith(p.output().stdout!, 'ready ');
    p.stop(60_000); // the grace is never reached: SIGTERM ends it
    const { exit, leftovers } = await p.ended;
    expect(exit).toEqual({ exitCode: null, signal: 'SIGTERM', isTerminated: true, rc: 143 });
    expect(leftovers).toMatchObject({ killed: 0, left: [], passes: 1, scanned: true });
  });

  it('ends a process that ignores SIGTERM with SIGKILL after the grace period (rc 137), after it saw the SIGTERM', async () => {
    const p = start('gen-ignore-term.mjs');
    await lineStartingWith(p.output().stdout!, 'ready ');
    const ignoring = lineStartingWith(p.output().stdout!, 'ignoring SIGTERM');
    // It sees the SIGTERM only once it runs, which on a loaded machine took longer than a short
    // grace: first a grace it never outwaits, then, once it said it ignores the SIGTERM, a stop
    // with a short one (a second stop restarts the grace).
    p.stop(600_000);
    await ignoring;
    p.stop(300);
    expect((await p.ended).exit).toEqual({ exitCode: null, signal: 'SIGKILL', isTerminated: true, rc: 137 });
    expect(gone(p.pid)).toBe(true);
  });

  it.each([
    ['in its process group', 'gen-grandchild.mjs'],
    ['in a session of its own (found by its parent link, captured before the signal)', 'gen-detached-grandchild.mjs'],
  ])('ends a grandchild %s', async (_where, file) => {
    const p = start(file);
    const grandchild = Number((await lineStartingWith(p.output().stdout!, 'grandchild ')).split(' ')[1]);
    expect(gone(grandchild)).toBe(false);
    p.stop(60_000);
    expect((await p.ended).exit.rc).toBe(143);
    expect(gone(grandchild)).toBe(true);
  });

  it('does nothing once it exited', async () => {
    const p = start('exit-3.mjs');
    await p.ended;
    p.stop(0);
    expect((await p.ended).exit.rc).toBe(3);
  });
});
