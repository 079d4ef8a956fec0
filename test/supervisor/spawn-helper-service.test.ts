/**
 * The service never forks a job itself: its spawn helper process does (src/process/spawn-helper.ts),
 * ordered by the job I/O thread, which also reads every job's output (src/supervisor/job-io-main.ts).
 * The compiled service runs as its own process; strace, attached to its main thread and to the job
 * I/O thread, records the process, connect and read calls each makes while 8 jobs start and print;
 * each job's parent is the helper. The helper's death is not silent: the service logs it and
 * exits 1, and its next start marks the jobs it could no longer follow `lost`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { listProcs, readCmdline, readProc } from '../../src/process/proc-scan.js';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { requireStrace, traceThread } from '../helpers/strace.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { killMarked } from '../process/helpers.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => {
  requireBuild();
  requireStrace();
});
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const generate = (svc: ServiceProcess) =>
  fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'harbor-lights' }) });

/**
 * The service's spawn helper: its one child running spawn-helper-main.js. The job I/O thread forks it as it starts,
 * which may be after the service first answers (a busy machine): waited for.
 */
async function helperOf(servicePid: number): Promise<number> {
  return waitFor(() => {
    const found = listProcs().filter((p) => p.ppid === servicePid && p.state !== 'Z' && (readCmdline(p.pid) ?? []).some((a) => a.endsWith('spawn-helper-main.js')));
    if (found.length > 1) throw new Error(`expected one spawn helper under ${servicePid}, found ${found.length}`);
    return found[0]?.pid;
  }, `the spawn helper under ${servicePid}`);
}

describe('the jobs’ spawns', () => {
  it('never fork the service nor read a job from its main thread: the job I/O thread connects and reads every job’s output, each job is the spawn helper’s child', async () => {
    const store = makeTempStore();
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    const svc = await startServiceProcess(store, { DISPATCH_CLI: fixture('print-lines.mjs') }, (fn) => cleanups.push(fn));
    const pid = svc.child.pid as number;
    const helper = await helperOf(pid);
    type Status = { jobs: { spawner: unknown; thread: { tid: number; nice: number; lines: number; queued: number } } };
    const before = (await (await fetch(`${svc.url}/api/system-status`)).json()) as Status;
    const tid = before.jobs.thread.tid;
    // Its own kernel thread of the service, at CONSOLE_JOB_THREAD_NICE (5 by default), below the main thread's 0.
    expect(fs.existsSync(`/proc/${pid}/task/${tid}`)).toBe(true);
    expect(tid).not.toBe(pid);
    expect(before.jobs.thread.nice).toBe(5);
    expect(Number(fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16])).toBe(5);
    expect(Number(fs.readFileSync(`/proc/${pid}/task/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16])).toBe(0);

    // One strace per thread: the main thread (the process's own id) and the job I/O thread. -yy
    // names each descriptor (a unix socket as UNIX-STREAM), so a read of a job's output shows.
    const calls = 'trace=%process,connect,read,readv,recvfrom,recvmsg';
    const traces = [pid, tid].map((id) => traceThread(id, path.join(store.tmp, `thread-${id}.strace`), ['-yy', '-e', calls], (fn) => cleanups.push(fn)));
    await waitFor(() => (traces.every((t) => t.attached()) ? true : undefined), 'strace to attach to both threads');

    const answers = await Promise.all(Array.from({ length: 8 }, () => generate(svc)));
    const jobs = (await Promise.all(answers.map((r) => r.json()))) as { proposalId: string; pid: number }[];
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(202));
    for (const job of jobs) cleanups.push(() => killMarked(`CONSOLE_JOB_ID=${job.proposalId}`));
    const parents = new Set<number>();
    for (const job of jobs) {
      // Read from its spawn event's pid while it may still run; a job already reaped has none.
      const stat = readProc(job.pid);
      if (stat !== null && stat.state !== 'Z') parents.add(stat.ppid);
      const { exit, lines } = await waitForJobEvents(svc.url, job.proposalId);
      expect(exit.summary).toBe('dispatch_cli exited rc=0');
      expect(lines.map((e) => e.summary).filter((s) => s.startsWith('out '))).toEqual(['out 1', 'out 2', 'out 3']);
    }
    for (const ppid of parents) expect(ppid).toBe(helper);
    const status = (await (await fetch(`${svc.url}/api/system-status`)).json()) as Status;
    expect(status.jobs.spawner).toEqual({ pid: helper, spawned: 8, refused: 0, running: 0, sessions: 'shared' });
    expect(status.jobs.thread.lines).toBeGreaterThanOrEqual(8 * 3);
    expect(status.jobs.thread.queued).toBe(0);

    for (const t of traces) t.strace.kill('SIGINT'); // detaches; the service runs on
    await Promise.all(traces.map((t) => t.exited));
    const [main, io] = traces.map((t) => fs.readFileSync(t.file, 'utf8').split('\n')) as [string[], string[]];
    // A new thread is a clone too (CLONE_THREAD); a new process is any other clone, fork or vfork.
    const forks = main.filter((l) => /^(clone3?|fork|vfork)\(/.test(l) && !l.includes('CLONE_THREAD'));
    expect(forks).toEqual([]);
    expect(main.filter((l) => l.startsWith('execve('))).toEqual([]);
    // No unix socket is connected or read on the main thread: the jobs' output never reaches it as bytes.
    const unixCalls = (trace: string[]) => trace.filter((l) => /^(connect|read|readv|recvfrom|recvmsg)\(\d+<UNIX/.test(l));
    expect(unixCalls(main)).toEqual([]);
    // The same trace of the job I/O thread sees them: two connections per job, then their reads.
    expect(unixCalls(io).filter((l) => l.startsWith('connect(')).length).toBe(2 * 8);
    expect(unixCalls(io).some((l) => l.startsWith('read(') && l.includes('out 1'))).toBe(true);
  });

  it('stop the service when the spawn helper dies: logged, exit 1, and the next start marks its running job lost', async () => {
    const store = makeTempStore();
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    const env = { DISPATCH_CLI: fixture('forever.mjs'), LOG_LEVEL: 'info' };
    const svc = await startServiceProcess(store, env, (fn) => cleanups.push(fn));
    const res = await generate(svc);
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    cleanups.push(() => killMarked(`CONSOLE_JOB_ID=${proposalId}`));

    process.kill(await helperOf(svc.child.pid as number), 'SIGKILL');
    const [code] = await svc.exited;
    expect(code).toBe(1);
    expect(svc.stderr()).toMatch(/console-backend: the spawn helper process \d+ ended \(SIGKILL\); exiting/);
    expect(svc.stdout()).toContain('the job I/O thread or its spawn helper process died');

    const again = await startServiceProcess(store, env, (fn) => cleanups.push(fn));
    const job = (await (await fetch(`${again.url}/api/jobs/${proposalId}`)).json()) as { state: string };
    expect(job.state).toBe('lost');
    again.child.kill('SIGTERM');
    await again.exited;
  });
});
