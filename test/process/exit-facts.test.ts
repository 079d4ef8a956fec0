/**
 * Spawn and exit facts: a managed process's exit as execa names it,
 * `exitCode`, `signal`, `isTerminated`, and `rc` (128 + the signal's number for a signal),
 * from real fixture processes.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { exitFactsOf, HousekeepingThread, spawnManaged } from '../../src/process/index.js';
import { fixture } from '../helpers/service.js';
import { killTestProcesses, lineStartingWith, testSpawnOptions } from './helpers.js';
import { WORKER_FILES } from '../../src/config/paths.js';

const procs = new HousekeepingThread(WORKER_FILES.proc);
afterAll(() => procs.close());
// Whatever the outcome, no process of a test outlives it.
afterEach(killTestProcesses);

const start = (file: string, args: string[] = []) => spawnManaged(procs, process.execPath, [fixture(file), ...args], testSpawnOptions());

describe('exit facts of a process that exits by itself', () => {
  it.each([
    ['exit-3.mjs', [], 3],
    ['print-lines.mjs', [], 0],
    ['print-lines.mjs', ['--rc', '1'], 1],
    ['print-lines.mjs', ['--rc', '255'], 255],
  ])('%s %j: exitCode %i, no signal', async (file, args, code) => {
    const p = start(file, args);
    expect(await p.exited).toEqual({ exitCode: code, signal: null, isTerminated: false, rc: code });
    expect((await p.ended).exit).toEqual(await p.exited);
  });
});

describe('exit facts of a process ended by a signal', () => {
  it.each([
    ['SIGHUP', 129],
    ['SIGINT', 130],
    ['SIGKILL', 137],
    ['SIGUSR2', 140],
    ['SIGALRM', 142],
    ['SIGTERM', 143],
  ] as const)('%s: rc %i', async (signal, rc) => {
    const p = start('forever.mjs');
    await lineStartingWith(p.output().stdout!, 'ready ');
    process.kill(p.pid, signal);
    expect(await p.exited).toEqual({ exitCode: null, signal, isTerminated: true, rc });
  });
});

describe('exitFactsOf', () => {
  it('maps the exit event’s code or signal', () => {
    expect(exitFactsOf(0, null)).toEqual({ exitCode: 0, signal: null, isTerminated: false, rc: 0 });
    expect(exitFactsOf(2, null)).toEqual({ exitCode: 2, signal: null, isTerminated: false, rc: 2 });
    expect(exitFactsOf(null, 'SIGSEGV')).toEqual({ exitCode: null, signal: 'SIGSEGV', isTerminated: true, rc: 139 });
    expect(exitFactsOf(null, 'SIGABRT')).toEqual({ exitCode: null, signal: 'SIGABRT', isTerminated: true, rc: 134 });
  });
});
