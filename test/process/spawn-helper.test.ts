/**
 * The spawn helper process (src/process/spawn-helper.ts): a job's fork happens there, never in
 * this process; what the job prints reaches this process all the same, nothing lost even when it
 * exits before its output is read; a refusal comes back with its errno; stray connections to the
 * helper's socket change nothing; its death is reported once.
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { WORKER_FILES } from '../../src/config/paths.js';
import { HousekeepingThread, ProcessSpawnError, SpawnHelper, spawnManagedVia } from '../../src/process/index.js';
import { readProc } from '../../src/process/proc-scan.js';
import { fixture } from '../helpers/service.js';
import { waitFor } from '../helpers/events.js';
import { killTestProcesses, lineStartingWith, testSpawnOptions } from './helpers.js';

const procs = new HousekeepingThread(WORKER_FILES.proc);
const deaths: Error[] = [];
const helper = new SpawnHelper(WORKER_FILES.spawnHelper, (err) => deaths.push(err));
afterAll(async () => {
  await helper.close();
  await procs.close();
});
afterEach(killTestProcesses);

const readAll = async (s: NodeJS.ReadableStream) => {
  let text = '';
  for await (const chunk of s) text += String(chunk);
  return text;
};

describe('spawnManagedVia (the spawn helper process)', () => {
  it('forks in the helper, not here: the job is the helper’s child and leads its own process group', async () => {
    const p = await spawnManagedVia(helper, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions());
    await lineStartingWith(p.output().stdout!, 'ready ');
    const info = readProc(p.pid);
    expect(info?.ppid).toBe(helper.pid);
    expect(info?.ppid).not.toBe(process.pid);
    expect(readProc(helper.pid as number)?.ppid).toBe(process.pid);
    expect(info?.pgid).toBe(p.pid);
    p.stop(60_000); // the grace is never reached: SIGTERM ends it
    expect((await p.ended).exit).toMatchObject({ signal: 'SIGTERM', rc: 143 });
  });

  it('starts every job in the helper’s session, each leading a process group of its own: one autogroup for all jobs, not the service’s', async () => {
    const jobs = await Promise.all([0, 1].map(() => spawnManagedVia(helper, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions())));
    for (const p of jobs) await lineStartingWith(p.output().stdout!, 'ready ');
    const helperInfo = readProc(helper.pid as number);
    expect(helperInfo?.sid, 'the helper leads a session of its own').toBe(helper.pid);
    expect(helperInfo?.sid).not.toBe(readProc(process.pid)?.sid);
    expect(helper.stats().sessions).toBe('shared');
    const group = (pid: number) => fs.readFileSync(`/proc/${pid}/autogroup`, 'utf8').split(' ')[0];
    for (const p of jobs) {
      const info = readProc(p.pid);
      expect(info?.sid).toBe(helper.pid);
      expect(info?.pgid).toBe(p.pid);
      // The job's own program (perl gave its place to it: the same pid).
      expect(fs.readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').split('\0')[0]).toBe(process.execPath);
      if (fs.existsSync(`/proc/${p.pid}/autogroup`)) {
        expect(group(p.pid)).toBe(group(helper.pid as number));
        expect(group(p.pid)).not.toBe(group(process.pid));
      }
    }
    // Stopping one stops its group and tree only: the other job runs on.
    const [first, second] = jobs as [(typeof jobs)[0], (typeof jobs)[0]];
    first.stop(60_000);
    expect((await first.ended).exit).toMatchObject({ signal: 'SIGTERM' });
    expect(readProc(second.pid)?.state).not.toBe('Z');
    expect(readProc(helper.pid as number)).not.toBeNull();
    second.stop(60_000);
    await second.ended;
  });

  it('without perl, starts each job as the leader of a session of its own (and reports it)', async () => {
    const plain = new SpawnHelper(WORKER_FILES.spawnHelper, () => {}, { perl: '/nonexistent/perl' });
    try {
      const p = await spawnManagedVia(plain, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions());
      expect(plain.stats().sessions).toBe('one per job');
      expect(readProc(p.pid)).toMatchObject({ sid: p.pid, pgid: p.pid });
      p.stop(60_000);
      await p.ended;
    } finally {
      await plain.close();
    }
  });

  it('finds a program named without a path on the job’s PATH, as a spawn does', async () => {
    const p = await spawnManagedVia(helper, procs, 'true', [], testSpawnOptions({ env: { PATH: '/nonexistent:/usr/bin:/bin' } }));
    expect((await p.ended).exit).toMatchObject({ rc: 0 });
  });

  it('sets the order’s nice value on the job and on its autogroup right after its exec, before reporting it', async () => {
    const autogroups = fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
    /** Field 19 of /proc/<pid>/stat. */
    const niceOf = (pid: number) => {
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
    };
    const child = await helper.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: {}, stdout: true, stderr: false, nice: 13 });
    // Read at once: no step of this process lowered it, the helper did before its report.
    expect(child.lowered).toEqual({ process: true, group: autogroups ? 'set' : 'none' });
    expect(niceOf(child.pid)).toBe(13);
    if (autogroups) expect(fs.readFileSync(`/proc/${child.pid}/autogroup`, 'utf8')).toMatch(/ nice 13$/m);
    // Without a nice value in the order, nothing is set: the job runs at the helper's (this process's) priority.
    const plain = await helper.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: {}, stdout: true, stderr: false });
    expect(plain.lowered).toBeNull();
    expect(niceOf(plain.pid)).toBe(0);
    for (const c of [child, plain]) {
      process.kill(c.pid, 'SIGKILL');
      await c.exit;
      c.stdout?.destroy();
    }
  });

  it('holds none of this process’s environment (its secrets): each job’s comes with its order', async () => {
    await (helper as unknown as { socket: Promise<string> }).socket;
    const environ = fs.readFileSync(`/proc/${helper.pid}/environ`, 'latin1').split('\0').filter(Boolean);
    // Node adds its IPC channel's own entries (NODE_CHANNEL_FD…).
    expect(environ.map((e) => e.slice(0, e.indexOf('='))).filter((name) => !name.startsWith('NODE_CHANNEL_'))).toEqual(['TMPDIR']);
  });

  it('passes arguments, working directory and environment as they are, and the exit code', async () => {
    const args = ['two words', "it's", '; echo $HOME', '$(id)', '', 'ünïcödé'];
    const p = await spawnManagedVia(helper, procs, process.execPath, [fixture('echo-argv.mjs'), ...args], testSpawnOptions({ cwd: '/' }));
    expect(JSON.parse(await lineStartingWith(p.output().stdout!, '['))).toEqual(args);
    expect((await p.ended).exit.rc).toBe(0);
    const code = 'console.log(JSON.stringify({ cwd: process.cwd(), home: process.env.HOME ?? null })); process.exit(7)';
    const q = await spawnManagedVia(helper, procs, process.execPath, ['-e', code], testSpawnOptions({ cwd: '/' }));
    expect(JSON.parse(await lineStartingWith(q.output().stdout!, '{'))).toEqual({ cwd: '/', home: null });
    expect((await q.ended).exit).toMatchObject({ exitCode: 7, rc: 7, signal: null });
  });

  it('gives the job exactly its order’s environment, perl’s own variables included, none of them acting on perl (a PERL5OPT naming no module, a locale not installed)', async () => {
    const env = {
      PERL5OPT: '-MNo::Such::Module',
      PERL5LIB: '/nonexistent/lib',
      PERL_HASH_SEED_DEBUG: '1',
      PERL_BADLANG: 'yes',
      LC_ALL: 'xx_YY.UTF-8',
      CONSOLE_SPAWN_KEPT: 'PATH',
      CONSOLE_SPAWN_KEPT_0: 'kept=as it is',
      SPACED: 'a b=c',
    };
    const code = 'console.log(JSON.stringify(process.env)); console.error("own stderr")';
    const p = await spawnManagedVia(helper, procs, process.execPath, ['-e', code], testSpawnOptions({ env, stderr: 'pipe' }));
    const stderr = readAll(p.output().stderr!);
    const seen = JSON.parse(await lineStartingWith(p.output().stdout!, '{')) as Record<string, string>;
    expect((await p.ended).exit.rc).toBe(0);
    expect(seen).toEqual({ PATH: process.env.PATH ?? '', TEST_MARK: expect.any(String), ...env });
    // Nothing of perl's: no locale warning, no hash seed, no missing module.
    expect(await stderr).toBe('own stderr\n');
  });

  it('keeps what a process printed before its output is read, even when it exited meanwhile', async () => {
    const code = 'process.stdout.write(Array.from({ length: 2000 }, (_, i) => `line ${i + 1}\\n`).join("")); console.error("last words")';
    const jobs = await Promise.all(Array.from({ length: 16 }, () => spawnManagedVia(helper, procs, process.execPath, ['-e', code], testSpawnOptions({ stderr: 'pipe' }))));
    await Promise.all(jobs.map((p) => p.exited));
    await new Promise((r) => setTimeout(r, 0));
    for (const p of jobs) {
      const { stdout, stderr } = p.output();
      const [out, err] = await Promise.all([readAll(stdout!), readAll(stderr!)]);
      expect(out.split('\n').filter(Boolean)).toEqual(Array.from({ length: 2000 }, (_, i) => `line ${i + 1}`));
      expect(err).toBe('last words\n');
      await p.ended;
    }
  });

  it.each([
    ['a program that does not exist', '/nonexistent/dir/program', 'ENOENT'],
    ['a name not on PATH', 'no-such-program-anywhere-9f2c', 'ENOENT'],
    ['a directory', '/', 'EACCES'],
  ])('refuses %s with ProcessSpawnError and its errno, leaving no descriptor behind', async (_what, file, errno) => {
    const descriptors = () => fs.readdirSync('/proc/self/fd').length;
    const before = descriptors();
    const err = await spawnManagedVia(helper, procs, file, [], testSpawnOptions({ stderr: 'pipe' })).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ProcessSpawnError);
    expect((err as ProcessSpawnError).errno).toBe(errno);
    await waitFor(() => (descriptors() <= before ? true : undefined), `the descriptors back to ${before} (now ${descriptors()})`);
  });

  it('ignores connections that are not a job’s (junk, a repeated tag, nothing at all) and goes on spawning', async () => {
    const socket = (helper as unknown as { socket: Promise<string> }).socket;
    const path = await socket;
    const stray = await Promise.all(
      ['not a tag at all!', 'zzzzzzzzzzzzzzzzo', '0123456789abcdefo', '0123456789abcdefo', ''].map(
        (tag) =>
          new Promise<net.Socket>((resolve) => {
            const s = net.connect(path, () => {
              if (tag) s.write(tag);
              resolve(s);
            });
            s.on('error', () => {});
          }),
      ),
    );
    const p = await spawnManagedVia(helper, procs, process.execPath, [fixture('echo-argv.mjs'), 'still'], testSpawnOptions());
    expect(JSON.parse(await lineStartingWith(p.output().stdout!, '['))).toEqual(['still']);
    await p.ended;
    for (const s of stray) s.destroy();
    expect(deaths).toEqual([]);
  });
});

describe('the spawn helper’s figures', () => {
  it('count the jobs it started, the spawns refused and the jobs not exited yet; no pid once it is gone', async () => {
    const h = new SpawnHelper(WORKER_FILES.spawnHelper, () => {});
    expect(h.stats()).toMatchObject({ pid: h.pid, spawned: 0, refused: 0, running: 0 });
    const long = await spawnManagedVia(h, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions());
    const short = await spawnManagedVia(h, procs, process.execPath, ['-e', ''], testSpawnOptions());
    await expect(spawnManagedVia(h, procs, '/nonexistent/dir/program', [], testSpawnOptions())).rejects.toThrow(ProcessSpawnError);
    await short.ended;
    expect(h.stats()).toEqual({ pid: h.pid, spawned: 2, refused: 1, running: 1, sessions: 'shared' });
    long.stop(60_000);
    await long.ended;
    expect(h.stats()).toEqual({ pid: h.pid, spawned: 2, refused: 1, running: 0, sessions: 'shared' });
    await h.close();
    expect(h.stats()).toMatchObject({ pid: null, spawned: 2, refused: 1 });
  });
});

describe('the spawn helper’s death', () => {
  it('is reported once; spawns after it are refused; the jobs it started run on', async () => {
    const died: Error[] = [];
    const h = new SpawnHelper(WORKER_FILES.spawnHelper, (err) => died.push(err));
    const p = await spawnManagedVia(h, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions());
    await lineStartingWith(p.output().stdout!, 'ready ');
    process.kill(h.pid as number, 'SIGKILL');
    await h.exited;
    expect(died).toHaveLength(1);
    expect(died[0]?.message).toMatch(/spawn helper process \d+ ended \(SIGKILL\)/);
    await expect(spawnManagedVia(h, procs, process.execPath, [fixture('forever.mjs')], testSpawnOptions())).rejects.toThrow(ProcessSpawnError);
    expect(readProc(p.pid)?.state).not.toBe('Z');
    await h.close();
    expect(died).toHaveLength(1);
  });

  it('is not a death when it was let go: close() ends it quietly and removes its socket', async () => {
    const died: Error[] = [];
    const h = new SpawnHelper(WORKER_FILES.spawnHelper, (err) => died.push(err));
    const path = await (h as unknown as { socket: Promise<string> }).socket;
    expect(fs.existsSync(path)).toBe(true);
    expect(fs.statSync(path.slice(0, path.lastIndexOf('/'))).mode & 0o077).toBe(0);
    await h.close();
    expect(died).toEqual([]);
    expect(fs.existsSync(path)).toBe(false);
  });

  it('ignores the signals of the service’s process group: a Ctrl-C drains the jobs through it', async () => {
    const died: Error[] = [];
    const h = new SpawnHelper(WORKER_FILES.spawnHelper, (err) => died.push(err));
    await (h as unknown as { socket: Promise<string> }).socket;
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.kill(h.pid as number, signal);
    const p = await spawnManagedVia(h, procs, process.execPath, [fixture('echo-argv.mjs'), 'after'], testSpawnOptions());
    expect(JSON.parse(await lineStartingWith(p.output().stdout!, '['))).toEqual(['after']);
    expect((await p.ended).exit.rc).toBe(0);
    await h.close();
    expect(died).toEqual([]);
  });
});

describe('the helper let go before it listened', () => {
  it('exits 0 with nothing on stderr and its temp folder removed, however early its channel closes', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'helper-early-'));
    try {
      // Twenty at once, each let go right after its start: before it listened, while it tells it is ready, or after.
      const ends = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const child = fork(WORKER_FILES.spawnHelper, [], { stdio: ['ignore', 'ignore', 'pipe', 'ipc'], env: { ...process.env, TMPDIR: tmp } });
          let stderr = '';
          child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
          await once(child, 'spawn');
          child.disconnect();
          const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
          return { code, signal, stderr };
        }),
      );
      expect(ends.filter((e) => e.code !== 0 || e.stderr !== '')).toEqual([]);
      expect(fs.readdirSync(tmp)).toEqual([]);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
