/**
 * Spawning a managed process: from an argument array, never through a
 * shell, as the leader of a process group of its own, with its environment (and mark) and
 * working directory; a spawn the operating system refuses throws and leaves nothing running.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { ProcessSpawnError, HousekeepingThread, spawnManaged } from '../../src/process/index.js';
import { readProc } from '../../src/process/proc-scan.js';
import { fixture } from '../helpers/service.js';
import { killTestProcesses, lineStartingWith, testSpawnOptions } from './helpers.js';
import { WORKER_FILES } from '../../src/config/paths.js';

const procs = new HousekeepingThread(WORKER_FILES.proc);
afterAll(() => procs.close());
// Whatever the outcome, no process of a test outlives it.
afterEach(killTestProcesses);

describe('spawnManaged', () => {
  it('starts the program as the leader of its own process group', async () => {
    const p = spawnManaged(procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions());
    await lineStartingWith(p.output().stdout!, 'ready ');
    const info = readProc(p.pid);
    expect(info?.pgid).toBe(p.pid);
    expect(info?.pgid).not.toBe(readProc(process.pid)?.pgid);
    p.stop(60_000); // the grace is never reached: SIGTERM ends it
    expect((await p.ended).exit.signal).toBe('SIGTERM');
  });

  it('passes every argument as it is: spaces, quotes and shell syntax reach the program unchanged', async () => {
    const args = ['two words', "it's", '"quoted"', '; echo $HOME', '$(id)', '`id`', '*', '| cat', '> /tmp/x', '', 'ünïcödé'];
    const p = spawnManaged(procs, process.execPath, [fixture('echo-argv.mjs'), ...args], testSpawnOptions());
    const line = await lineStartingWith(p.output().stdout!, '[');
    expect(JSON.parse(line)).toEqual(args);
    expect((await p.ended).exit.rc).toBe(0);
  });

  it('runs in the given working directory with the given environment, mark included', async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'managed-cwd-'));
    try {
      const code = 'console.log(JSON.stringify({ cwd: process.cwd(), mark: process.env.TEST_MARK, home: process.env.HOME ?? null }))';
      const opts = testSpawnOptions({ cwd });
      const p = spawnManaged(procs, process.execPath, ['-e', code], opts);
      const seen = JSON.parse(await lineStartingWith(p.output().stdout!, '{')) as Record<string, unknown>;
      expect(seen).toEqual({ cwd: fs.realpathSync(cwd), mark: opts.mark.slice('TEST_MARK='.length), home: null });
      await p.ended;
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });

  it('keeps what a process printed before its output is read, even when it exited meanwhile', async () => {
    // Node resumes (and so discards) a child's unread pipes at its exit; a job's reader is
    // attached only once its launch is recorded, which can take longer than a short job runs.
    // Less than the pipes hold: a process that prints more blocks until it is read (nothing lost).
    const code = 'process.stdout.write(Array.from({ length: 200 }, (_, i) => `line ${i + 1}\\n`).join("")); console.error("last words")';
    const p = spawnManaged(procs, process.execPath, ['-e', code], testSpawnOptions({ stderr: 'pipe' }));
    await p.exited;
    // Past the exit's own turn, where Node flushes the pipes nobody reads.
    await new Promise((r) => setTimeout(r, 0));
    await new Promise((r) => setImmediate(r));
    const { stdout, stderr } = p.output();
    const read = async (s: NodeJS.ReadableStream) => {
      let text = '';
      for await (const chunk of s) text += String(chunk);
      return text;
    };
    const [out, err] = await Promise.all([read(stdout!), read(stderr!)]);
    expect(out.split('\n').filter(Boolean)).toEqual(Array.from({ length: 200 }, (_, i) => `line ${i + 1}`));
    expect(err).toBe('last words\n');
    await p.ended;
  });

  it.each([
    ['a program that does not exist', '/nonexistent/dir/program'],
    ['a name not on PATH', 'no-such-program-anywhere-9f2c'],
  ])('throws ProcessSpawnError for %s', (_what, file) => {
    expect(() => spawnManaged(procs, file, [], testSpawnOptions())).toThrow(ProcessSpawnError);
  });
});
