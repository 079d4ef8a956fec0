/**
 * A spawn the operating system refuses: the generation request answers 500
 * `spawn_failed` with the errno, and the job is recorded as failed at once, `exitReason: "spawn
 * failed"`, the refusal as `exitDetail`, no pid, so an operator sees it among the jobs. The
 * refusal is real: the service process's limit of open files is lowered to what it holds
 * (`prlimit`), so the descriptors of the child's output cannot be made (EMFILE). (Why other jobs ended:
 * test/http/jobs.test.ts for `exited` and `cancelled`, test/main/shutdown.test.ts for
 * `shutdown` and `lost`.)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** The soft and hard limits of open files of process `pid`. */
function openFileLimits(pid: number): { soft: string; hard: string } {
  const line = fs
    .readFileSync(`/proc/${pid}/limits`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('Max open files'));
  const [soft, hard] = (line ?? '').replace('Max open files', '').trim().split(/\s+/);
  if (!soft || !hard) throw new Error(`no open-file limits for ${pid}: ${line}`);
  return { soft, hard };
}

/** The lowest descriptor number process `pid` does not hold now. */
function lowestFreeDescriptor(pid: number): number {
  const held = new Set(fs.readdirSync(`/proc/${pid}/fd`).map(Number));
  let lowest = 0;
  while (held.has(lowest)) lowest++;
  return lowest;
}

describe('a refused spawn', () => {
  it('answers 500 spawn_failed and records the job: exitReason "spawn failed", the errno as exitDetail, no pid', async () => {
    const store = makeTempStore('sample');
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    const svc = await startServiceProcess(store, { DISPATCH_CLI: fixture('print-lines.mjs') }, (fn) => cleanups.push(fn));
    const pid = svc.child.pid as number;
    const limits = openFileLimits(pid);
    const generate = () => fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'harbor-lights' }) });
    // The connection is open before the limit falls (the request needs no new descriptor).
    expect((await fetch(`${svc.url}/api/health`)).status).toBe(200);
    // So are the modules a request with a body loads on first use (the body parser's encodings):
    // under the limit they could not be read, and the request would fail on a module (EMFILE)
    // before any spawn. A body that fails validation loads them, starting nothing.
    const unstarted = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(unstarted.status, await unstarted.clone().text()).toBe(422);

    // No descriptor free: the limit is the lowest number not in use (a limit caps the numbers of
    // new descriptors; those open above it stay open). Were one left free, a descriptor the
    // service held in passing when they were listed would leave two: all a job's output needs.
    // So they are listed again under the limit set, and a number freed below it meanwhile lowers it
    // again, until none is (on a busy machine the service's samplers hold descriptors in passing).
    let limit = Infinity;
    for (;;) {
      const lowestFree = lowestFreeDescriptor(pid);
      if (lowestFree >= limit) break;
      limit = lowestFree;
      execFileSync('prlimit', ['--pid', String(pid), `--nofile=${limit}:${limits.hard}`]);
    }
    let res: Response;
    try {
      res = await generate();
    } finally {
      execFileSync('prlimit', ['--pid', String(pid), `--nofile=${limits.soft}:${limits.hard}`]);
    }
    expect(res.status, await res.clone().text()).toBe(500);
    const body = (await res.json()) as { detail: string; code: string };
    expect(body).toEqual({ code: 'spawn_failed', detail: 'the operating system refused to start the dispatch tool (EMFILE)' });

    const jobs = (await (await fetch(`${svc.url}/api/jobs`)).json()) as Record<string, unknown>[];
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      projectId: 'harbor-lights',
      pid: null,
      state: 'exited failed',
      rc: null,
      signal: null,
      stdoutLines: 0,
      stderrLines: 0,
      cancelRequested: false,
      exitReason: 'spawn failed',
      exitDetail: 'the operating system refused to start the dispatch tool (EMFILE)',
      endedAt: expect.any(String),
    });
    // Nothing ran: no event of the job; and the next request, the limit back, starts one.
    const events = (await (await fetch(`${svc.url}/api/events?scopePrefix=engine/generation`)).json()) as unknown[];
    expect(events).toEqual([]);
    expect((await generate()).status).toBe(202);
  });
});
