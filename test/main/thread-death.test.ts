/**
 * A thread's crash in the service process (issue 25: "a thread that dies is not silent"): an uncaught error in the
 * event writer thread or the job I/O thread ends the service with a logged error, a line on stderr and exit 1; the
 * next start marks the running job lost and its process tree is gone; nothing acknowledged is lost. The crash is put
 * in by a preload (test/fixtures/thread-crash-preload.cjs) once a trigger file exists. No timing is asserted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { fixture, SAMPLE_STORE } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';
import { gone, killMarked } from '../process/helpers.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { jobMark } from '../../src/supervisor/running-job.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => requireBuild());
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const CASES = [
  { thread: 'event-writer', logged: 'the event writer thread died: events can no longer be stored; the service stops' },
  { thread: 'job-io', logged: 'the job I/O thread or its spawn helper process died' },
] as const;

describe.each(CASES)('the $thread thread crashes while a job runs', ({ thread, logged }) => {
  it('ends the service with a logged error and exit 1; the next start marks the job lost, its tree gone, every acknowledged write kept', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'thread-death-'));
    cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
    const trigger = path.join(tmp, 'crash-now');
    const env = {
      CONSOLE_DATA_DIR: SAMPLE_STORE,
      CONSOLE_STATE_DIR: path.join(tmp, 'state'),
      DISPATCH_CLI: fixture('lines-until-term.mjs'),
      LOG_LEVEL: 'info',
    };
    let svc: ServiceProcess = await startServiceProcess({
      env: { ...env, NODE_OPTIONS: `--require ${fixture('thread-crash-preload.cjs')}`, CRASH_THREAD: thread, CRASH_TRIGGER: trigger },
    });
    cleanups.push(() => svc.stop());
    const post = (p: string, body: unknown) => fetch(`${svc.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

    const started = await post('/api/proposals/generate', { project: 'harbor-lights' });
    expect(started.status).toBe(202);
    const job = (await started.json()) as { proposalId: string; pid: number };
    cleanups.push(() => killMarked(jobMark(job.proposalId)));
    await waitFor(async () => ((await allEvents(svc.url, 'scopePrefix=engine/generation')).some((e) => e.summary.startsWith('tick ')) ? true : undefined), 'the job’s lines');
    const acked: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `before the crash ${i}` });
      expect(r.status).toBe(202);
      acked.push(((await r.json()) as { id: string }).id);
    }

    fs.writeFileSync(trigger, '');
    expect(await svc.exited).toEqual([1, null]);
    // One line on stderr, naming the thread's error; the log has it with its stack.
    expect(svc.stderr()).toMatch(new RegExp(`^console-backend: (the job I/O thread failed: )?the ${thread} thread crashed on purpose; exiting\\n$`, 'm'));
    expect(svc.stderr().trim().split('\n')).toHaveLength(1);
    const fatal = svc
      .stdout()
      .split('\n')
      .filter((l) => l.includes(logged))
      .map((l) => JSON.parse(l) as { level: number; err: string; stack?: string });
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.err).toContain(`the ${thread} thread crashed on purpose`);
    expect(fatal[0]!.stack).toContain('thread-crash-preload.cjs');

    // The next start (no crash put in): the job is lost and its tree gone; the acknowledged writes are there.
    svc = await startServiceProcess({ env });
    const record = (await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as { state: string };
    expect(record.state).toBe('lost');
    await waitFor(() => (gone(job.pid) ? true : undefined), 'the job’s process to be gone');
    const stored = new Set((await allEvents(svc.url)).map((e) => e.id));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    expect(await svc.stop()).toEqual([0, null]);
  });
});
