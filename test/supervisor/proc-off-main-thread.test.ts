/**
 * No synchronous /proc reads on the main thread: the compiled service runs
 * as its own process, and strace, attached to its main thread alone (no -f: other threads are
 * not traced), records every file that thread names while a job's tool leaves a daemon that
 * keeps forking and the service sweeps a tree of hundreds of processes. The scans happen (every
 * process of the job ends), but on the process worker's thread: the main thread opens no
 * `/proc/<pid>/…` file at all.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { treeProcesses } from '../../src/process/proc-scan.js';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { killMarked } from '../process/helpers.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { requireStrace } from '../helpers/strace.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => {
  requireBuild();
  requireStrace();
});
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

describe('the scans of a job’s tree', () => {
  it('never run on the main thread: it opens no /proc/<pid> file while hundreds of processes are found and killed', async () => {
    const store = makeTempStore();
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    const tool = fixture('gen-forking-tree.mjs');
    const svc = await startServiceProcess(store, { DISPATCH_CLI: tool, LOG_LEVEL: 'info', FORKING_TARGET: '150' }, (fn) => cleanups.push(fn));
    const pid = svc.child.pid as number;

    const traceFile = path.join(store.tmp, 'main-thread.strace');
    const strace = spawn('strace', ['-p', String(pid), '-e', 'trace=%file', '-s', '4096', '-o', traceFile], { stdio: ['ignore', 'ignore', 'pipe'] });
    let straceErr = '';
    strace.stderr.setEncoding('utf8').on('data', (d: string) => (straceErr += d));
    const straceExited = once(strace, 'exit');
    cleanups.push(() => strace.kill('SIGKILL'));
    await waitFor(() => (/attached/.test(straceErr) ? true : undefined), 'strace to attach to the service');

    const res = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'harbor-lights' }) });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    const mark = `CONSOLE_JOB_ID=${proposalId}`;
    cleanups.push(() => killMarked(mark));
    const { exit } = await waitForJobEvents(svc.url, proposalId);
    expect(exit.summary).toBe('dispatch_cli exited rc=0');
    expect(treeProcesses(null, null, mark)).toEqual([]);

    strace.kill('SIGINT'); // detaches; the service runs on
    await straceExited;
    const trace = fs.readFileSync(traceFile, 'utf8').split('\n');
    // The trace covers the job: the main thread checked the tool file before it started it.
    expect(trace.some((l) => l.includes(`"${tool}"`))).toBe(true);
    const procFiles = trace.filter((l) => /"\/proc\/\d+\//.test(l) && !l.includes(`"/proc/${pid}/`));
    expect(procFiles).toEqual([]);

    const swept = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes('job leftovers killed'))
      .map((l) => JSON.parse(l) as { leftovers: { killed: number; passes: number; ms: number } });
    expect(swept).toHaveLength(1);
    const { killed, passes, ms } = swept[0]!.leftovers;
    expect(killed).toBeGreaterThan(150);
    console.log(`main thread: ${trace.length - 1} file calls traced during the job, 0 on /proc/<pid>; the worker's sweep killed ${killed} processes in ${passes} passes, ${ms} ms`);
  });
});
