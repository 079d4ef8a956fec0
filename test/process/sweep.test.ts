/**
 * The leftover sweep: after a managed process exits, its group, its captured
 * tree and every holder of its mark are SIGKILLed pass after pass until a scan finds none,
 * within bounds in passes and time; what survives the bound is reported. Real fixture processes.
 */
import { spawn } from 'node:child_process';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { HousekeepingThread, spawnManaged, sweepTree } from '../../src/process/index.js';
import { readCmdline, readProc, treeProcesses, type ProcInfo } from '../../src/process/proc-scan.js';
import { fixture } from '../helpers/service.js';
import { gone, killMarked, killTestProcesses, lineStartingWith, testSpawnOptions } from './helpers.js';
import { WORKER_FILES } from '../../src/config/paths.js';

const procs = new HousekeepingThread(WORKER_FILES.proc);
afterAll(() => procs.close());
/** Marks of processes a test started itself (not through testSpawnOptions). */
const marks: string[] = [];
afterEach(async () => {
  // Whatever the outcome, no process of a test outlives it.
  await killTestProcesses();
  for (const m of marks.splice(0)) await killMarked(m);
});
const options = testSpawnOptions; // marks it hands out are killed after each test

describe('the sweep after the exit', () => {
  it('kills what the tool left: group members, a session of its own, and a double fork found only by the mark', async () => {
    // rel-c-tree.mjs with "exit": the leader reports its tree and exits 0, leaving four processes.
    const opts = options();
    const p = spawnManaged(procs, process.execPath, [fixture('rel-c-tree.mjs'), '--model', 'exit'], opts);
    const [, , worker, sub, daemon, session] = (await lineStartingWith(p.output().stdout!, 'tree ')).split(' ').map(Number);
    const { exit, leftovers } = await p.ended;
    expect(exit.rc).toBe(0);
    for (const pid of [worker, sub, daemon, session]) expect(gone(pid as number), `pid ${pid}`).toBe(true);
    expect(leftovers.killed).toBeGreaterThanOrEqual(4);
    expect(leftovers.left).toEqual([]);
    expect(treeProcesses(null, null, opts.mark)).toEqual([]);
  });

  it('re-scans until a scan finds none: a daemon that keeps forking is gone, in more than one pass', async () => {
    const opts = options({ env: { FORKING_TARGET: '50' } });
    const p = spawnManaged(procs, process.execPath, [fixture('gen-forking-tree.mjs')], opts);
    const children = Number((await lineStartingWith(p.output().stdout!, 'tree ')).split(' ')[2]);
    const { leftovers } = await p.ended;
    expect(leftovers.left).toEqual([]);
    // The first pass found the daemon and its children; a later one had to find none.
    expect(leftovers.passes).toBeGreaterThanOrEqual(2);
    expect(leftovers.killed).toBeGreaterThan(children);
    expect(treeProcesses(null, null, opts.mark)).toEqual([]);
    console.log(`sweep: ${children} children of the daemon at the exit; ${leftovers.killed} killed in ${leftovers.passes} passes, ${leftovers.ms} ms`);
  });

  it.each([
    ['one pass', { maxPasses: 1, maxMs: 60_000 }],
    ['no time', { maxPasses: 1000, maxMs: 0 }],
  ])('stops at its bound (%s) and reports what the last pass still found', async (_what, sweep) => {
    const opts = options({ env: { FORKING_TARGET: '30' }, sweep });
    const p = spawnManaged(procs, process.execPath, [fixture('gen-forking-tree.mjs')], opts);
    await lineStartingWith(p.output().stdout!, 'tree ');
    const { leftovers } = await p.ended;
    expect(leftovers.passes).toBe(1);
    expect(leftovers.left.length).toBeGreaterThan(30);
    expect(leftovers.killed).toBe(leftovers.left.length);
  });
});

/** SIGKILLs the pids a test noted (orphans without the mark), whatever the outcome. */
const orphans: number[] = [];
afterEach(() => {
  for (const pid of orphans.splice(0)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {}
  }
});

// A process whose mark cannot be read and whose parent is gone is found by its session: the sweep
// takes every session of a process it found. (A forker SIGKILLed just after a fork leaves such a
// child: while it is in execve, /proc/<pid>/environ reads empty. An empty environment stands in.)
describe('the sweep finds a tree by its sessions', () => {
  it('an orphan with an empty environment, in the session of a live process of the tree', async () => {
    // The tool starts a daemon (a session of its own, the mark inherited); the daemon's shell leaves
    // `env -i sleep` behind and exits, so the sleep has no parent of the tree and no mark.
    const daemon = `const { spawn } = require('node:child_process');
const sh = spawn('sh', ['-c', 'env -i sleep 600 & echo $!'], { stdio: ['ignore', 'pipe', 'ignore'] });
const fs = require('node:fs');
// Reported once \`env\` has exec'd the sleep: until then the process still shows the mark.
const report = (pid) => fs.readFileSync('/proc/' + pid + '/cmdline', 'latin1').startsWith('sleep\\0') ? process.stdout.write('orphan ' + pid + '\\n') : setTimeout(report, 5, pid);
sh.stdout.setEncoding('utf8').on('data', (d) => report(Number(d)));
setInterval(() => {}, 1000);`;
    const tool = `const { spawn } = require('node:child_process');
const d = spawn(process.execPath, ['-e', ${JSON.stringify(daemon)}], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
d.stdout.setEncoding('utf8').on('data', (t) => { process.stdout.write('tree ' + d.pid + ' ' + t.split(' ')[1]); process.exit(0); });`;
    const opts = options();
    const p = spawnManaged(procs, process.execPath, ['-e', tool], opts);
    const [, daemonPid, orphan] = (await lineStartingWith(p.output().stdout!, 'tree ')).split(' ').map(Number);
    orphans.push(orphan as number);
    const { leftovers } = await p.ended;
    expect(leftovers.left).toEqual([]);
    expect(gone(daemonPid as number), 'the daemon').toBe(true);
    expect(gone(orphan as number), 'the orphan without the mark').toBe(true);
    expect(leftovers.killed).toBeGreaterThanOrEqual(2);
  });

  it('an orphan in the session of a process an earlier pass found, now gone', async () => {
    // A session leader (it holds the mark) leaves `env -i sleep` behind, is captured, then exits:
    // the next pass has only its session to go by.
    const value = `sessions-${process.pid}-${Date.now()}`;
    const mark = `TEST_MARK=${value}`;
    marks.push(mark);
    const leader = spawn('sh', ['-c', 'env -i sleep 600 & echo $!; read x'], { detached: true, stdio: ['pipe', 'pipe', 'ignore'], env: { PATH: process.env.PATH ?? '', TEST_MARK: value } });
    const orphan = Number(await lineStartingWith(leader.stdout!, ''));
    orphans.push(orphan);
    // Until `env` has exec'd the sleep, the process still shows the mark.
    while (readCmdline(orphan)?.[0] !== 'sleep') await new Promise((r) => setTimeout(r, 5));
    const captured = readProc(leader.pid!) as ProcInfo;
    expect(captured.sid).toBe(leader.pid);
    expect(readProc(orphan)?.sid, 'the sleep is in the leader’s session').toBe(leader.pid);
    const exited = new Promise((r) => leader.once('exit', r));
    leader.stdin!.end('\n');
    await exited;
    expect(treeProcesses(null, null, mark), 'nothing holds the mark any more').toEqual([]);
    const report = await sweepTree(procs, { root: null, pgid: null, mark, known: [captured] }, { maxPasses: 100, maxMs: 5000 });
    expect(report).toMatchObject({ killed: 1, left: [], scanned: true });
    expect(gone(orphan)).toBe(true);
  });

  it('never takes the service’s own session', () => {
    const own = readProc(process.pid) as ProcInfo;
    expect(treeProcesses(null, null, undefined, undefined, [own.sid])).toEqual([]);
  });

  it('signals a leader whose process group does not exist yet (a job before perl’s setpgrp) itself', async () => {
    // Not detached: it is in this process's group, not one of its own, as a job is until perl's setpgrp.
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, signal) => resolve(signal)));
    try {
      const pid = child.pid as number;
      expect(readProc(pid)?.pgid).not.toBe(pid);
      await procs.signalTree({ root: pid, pgid: pid, known: [] }, 'SIGKILL');
      expect(await exited).toBe('SIGKILL');
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('never takes a session whose leader lives outside the tree (the spawn helper’s, which every job shares)', async () => {
    // A leader of its own session starting two "jobs" in it, each with its own mark, as the spawn helper does.
    const a = `TEST_SHARED=a-${process.pid}`;
    const b = `TEST_SHARED=b-${process.pid}`;
    marks.push(a, b);
    const script = `const { spawn } = require('node:child_process');
      const start = (m) => spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { env: { ...process.env, TEST_SHARED: m }, stdio: 'ignore' }).pid;
      console.log('pids', start(${JSON.stringify(a.split('=')[1])}), start(${JSON.stringify(b.split('=')[1])}));
      setInterval(() => {}, 1000);`;
    const leader = spawn(process.execPath, ['-e', script], { detached: true, stdio: ['ignore', 'pipe', 'ignore'] });
    try {
      const [jobA, jobB] = (await lineStartingWith(leader.stdout, 'pids ')).split(' ').slice(1).map(Number) as [number, number];
      expect(readProc(jobA)?.sid).toBe(leader.pid);
      expect(treeProcesses(null, null, a).map((p) => p.pid)).toEqual([jobA]);
      // Its leader gone, the session is the tree's again (an orphan in a session its found leader left).
      leader.kill('SIGKILL');
      await new Promise((resolve) => leader.once('exit', resolve));
      expect(new Set(treeProcesses(null, null, a).map((p) => p.pid))).toEqual(new Set([jobA, jobB]));
    } finally {
      leader.kill('SIGKILL');
    }
  });
});

describe('sweepTree by a mark alone (start-up clean-up)', () => {
  it('kills the holders of the exact entry, and leaves alone a process whose entry only starts or ends like it', async () => {
    const value = `sweep-${process.pid}-${Date.now()}`;
    const mark = `TEST_MARK=${value}`;
    marks.push(mark, `TEST_MARK=${value}x`, `TEST_MARK=x${value}`, `XTEST_MARK=${value}`);
    const run = (env: Record<string, string>) => spawn('sleep', ['600'], { detached: true, stdio: 'ignore', env: { PATH: process.env.PATH ?? '', ...env } });
    const ours = [run({ TEST_MARK: value }), run({ TEST_MARK: value, OTHER: '1' })];
    const theirs = [run({ TEST_MARK: `${value}x` }), run({ TEST_MARK: `x${value}` }), run({ XTEST_MARK: value })];
    const report = await sweepTree(procs, { root: null, pgid: null, mark, known: [] }, { maxPasses: 100, maxMs: 5000 });
    expect(report).toMatchObject({ killed: 2, left: [], scanned: true });
    for (const c of ours) expect(gone(c.pid!)).toBe(true);
    for (const c of theirs) expect(gone(c.pid!)).toBe(false);
  });
});

describe('a process worker that fails', () => {
  it('still stops the process: its group is signalled from the main thread, and nothing rejects', async () => {
    const broken = new HousekeepingThread(fixture('proc-worker-broken.mjs'));
    try {
      const p = spawnManaged(broken, process.execPath, [fixture('forever.mjs')], options());
      await lineStartingWith(p.output().stdout!, 'ready ');
      p.stop(60_000);
      const { exit, leftovers } = await p.ended;
      expect(exit.rc).toBe(143);
      expect(leftovers).toMatchObject({ scanned: false, killed: 0, left: [] });
    } finally {
      await broken.close();
    }
  });
});

describe('a process worker that hangs', () => {
  it('has the task it leaves unanswered past its limit fall back, is replaced, and the tasks queued behind it run on the new thread: a job stops whole', async () => {
    const hangs: Error[] = [];
    const stuckWorker = new HousekeepingThread(fixture('proc-worker-hanging.mjs'), { answerLimitMs: 1000, onHang: (err) => hangs.push(err) });
    try {
      // The fixture never answers a describe of this pid: a thread stuck in a /proc read for good.
      const stuck = stuckWorker.describe(999_999_999);
      // A job whose stop (its kill passes, its sweep) is queued behind the stuck task.
      const p = spawnManaged(stuckWorker, process.execPath, [fixture('forever.mjs')], options());
      await lineStartingWith(p.output().stdout!, 'ready ');
      p.stop(60_000);
      expect(await stuck).toEqual({ info: null, cmdline: null });
      expect(hangs.map((e) => e.message)).toEqual(['the housekeeping thread did not answer within 1000 ms']);
      const { exit, leftovers } = await p.ended;
      expect(exit.rc).toBe(143);
      // Scanned by the thread that replaced the stuck one: /proc read, not the main thread's fallback.
      expect(leftovers).toMatchObject({ scanned: true, left: [] });
      expect((await stuckWorker.describe(process.pid)).info?.pid).toBe(process.pid);
      expect(hangs).toHaveLength(1);
    } finally {
      await stuckWorker.close();
    }
  });
});
