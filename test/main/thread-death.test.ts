/**
 * A thread's crash in the service process (issue 25: "a thread that dies is not silent"): an uncaught error in the
 * event writer thread or the job I/O thread ends the service with a logged error, a line on stderr and exit 1; the
 * next start marks the running job lost and its process tree is gone; nothing acknowledged is lost. The crash is put
 * in by a preload (test/fixtures/thread-crash-preload.cjs) once a trigger file exists. A hang alike (the thread alive,
 * answering nothing) past CONSOLE_THREAD_ANSWER_LIMIT_MS; and a stop (SIGTERM) while either hangs: the streams end
 * (after their bound when the event writer hangs in an append, whole when the job I/O thread hangs), then the hang
 * ends the service with exit 1. The housekeeping and replay threads (Piscina's) hung alike are replaced instead: the
 * task given up falls back (a cancel's kill pass, a stream's replay read on the main thread), logged, and the service
 * serves on; these check that the service passes CONSOLE_THREAD_ANSWER_LIMIT_MS to them. No timing is asserted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { SseClient } from '../helpers/sse.js';
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

/** A service with a fault put in `thread` (the preload), running one job that prints lines until SIGTERM. */
async function faultyService(thread: string, mode: 'crash' | 'hang', extraEnv: Record<string, string> = {}) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'thread-death-'));
  cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const trigger = path.join(tmp, 'fault-now');
  const env = {
    CONSOLE_DATA_DIR: SAMPLE_STORE,
    CONSOLE_STATE_DIR: path.join(tmp, 'state'),
    DISPATCH_CLI: fixture('lines-until-term.mjs'),
    LOG_LEVEL: 'info',
    ...extraEnv,
  };
  const svc: ServiceProcess = await startServiceProcess({
    env: { ...env, NODE_OPTIONS: `--require ${fixture('thread-crash-preload.cjs')}`, CRASH_THREAD: thread, CRASH_TRIGGER: trigger, CRASH_MODE: mode },
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
    const r = await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `before the fault ${i}` });
    expect(r.status).toBe(202);
    acked.push(((await r.json()) as { id: string }).id);
  }
  return { svc, env, job, acked, trigger, post };
}

/** The service's log lines (JSON) whose message contains `text`. */
function logged(svc: ServiceProcess, text: string): { level: number; msg: string; err?: string; stack?: string }[] {
  return svc
    .stdout()
    .split('\n')
    .filter((l) => l.includes(text))
    .map((l) => JSON.parse(l) as { level: number; msg: string; err?: string; stack?: string });
}

/** The next start (no fault put in): the job is lost and its tree gone; the acknowledged writes are there. */
async function checkNextStart(env: Record<string, string>, job: { proposalId: string; pid: number }, acked: string[]): Promise<void> {
  const svc = await startServiceProcess({ env });
  cleanups.push(() => svc.stop());
  const record = (await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as { state: string };
  expect(record.state).toBe('lost');
  await waitFor(() => (gone(job.pid) ? true : undefined), 'the job’s process to be gone');
  const stored = new Set((await allEvents(svc.url)).map((e) => e.id));
  expect(acked.filter((id) => !stored.has(id))).toEqual([]);
  expect(await svc.stop()).toEqual([0, null]);
}

const CASES = [
  { thread: 'event-writer', name: 'event writer', logged: 'the event writer thread died: events can no longer be stored; the service stops' },
  { thread: 'job-io', name: 'job I/O', logged: 'the job I/O thread or its spawn helper process died' },
] as const;

describe.each(CASES)('the $thread thread crashes while a job runs', ({ thread, logged: fatalText }) => {
  it('ends the service with a logged error and exit 1; the next start marks the job lost, its tree gone, every acknowledged write kept', async () => {
    const { svc, env, job, acked, trigger } = await faultyService(thread, 'crash');
    fs.writeFileSync(trigger, '');
    expect(await svc.exited).toEqual([1, null]);
    // One line on stderr, naming the thread's error; the log has it with its stack.
    expect(svc.stderr()).toMatch(new RegExp(`^console-backend: (the job I/O thread failed: )?the ${thread} thread crashed on purpose; exiting\\n$`, 'm'));
    expect(svc.stderr().trim().split('\n')).toHaveLength(1);
    const fatal = logged(svc, fatalText);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.err).toContain(`the ${thread} thread crashed on purpose`);
    expect(fatal[0]!.stack).toContain('thread-crash-preload.cjs');
    await checkNextStart(env, job, acked);
  });
});

// The answer limit set small (CONSOLE_THREAD_ANSWER_LIMIT_MS): a thread alive but answering nothing is taken for dead.
describe.each(CASES)('the $thread thread hangs while a job runs', ({ thread, name, logged: fatalText }) => {
  it('is taken for dead past CONSOLE_THREAD_ANSWER_LIMIT_MS: a logged error, exit 1; the next start marks the job lost, every acknowledged write kept', async () => {
    const { svc, env, job, acked, trigger } = await faultyService(thread, 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '2000' });
    fs.writeFileSync(trigger, '');
    expect(await svc.exited).toEqual([1, null]);
    expect(fs.existsSync(`${trigger}.hung`)).toBe(true);
    expect(svc.stderr()).toBe(`console-backend: the ${name} thread did not answer within 2000 ms; exiting\n`);
    const fatal = logged(svc, fatalText);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.err).toBe(`the ${name} thread did not answer within 2000 ms`);
    await checkNextStart(env, job, acked);
  });
});

describe('a stop (SIGTERM) while the event writer thread hangs', () => {
  it('ends the streams after the bound, logs it, and exits 1 once the thread is taken for dead; nothing acknowledged is lost', async () => {
    // The streams' bound (CONSOLE_KILL_GRACE_MS, 1 s) far below the answer limit: the streams end first.
    const { svc, env, job, acked, trigger, post } = await faultyService('event-writer', 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '10000', CONSOLE_KILL_GRACE_MS: '1000' });
    const stream = new SseClient(`${svc.url}/api/events/stream`);
    await stream.until((s) => s.status === 200, 'the stream to open');
    fs.writeFileSync(trigger, '');
    await waitFor(() => (fs.existsSync(`${trigger}.hung`) ? true : undefined), 'the writer thread to hang');
    // Stored before its answer: it waits for the hung thread (hung in an append), and is never acknowledged.
    const unanswered = post('/api/internal/bus', { severity: 'info', scope: 'unacked', summary: 'during the hang' }).catch((err: Error) => err);
    process.kill(svc.servicePid(), 'SIGTERM');
    await stream.done;
    expect(svc.child.exitCode).toBeNull();
    expect(await svc.exited).toEqual([1, null]);
    const answer = await unanswered;
    expect(answer instanceof Error || answer.status === 503, answer instanceof Error ? answer.message : `${answer.status} ${await answer.text()}`).toBe(true);
    const msgs = svc
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    const endedAt = msgs.indexOf('streams ended before the queued events were stored');
    const hungAt = msgs.findIndex((m) => m.startsWith('the event writer thread died'));
    expect(endedAt).toBeGreaterThan(-1);
    expect(hungAt).toBeGreaterThan(endedAt);
    expect(logged(svc, 'the event writer thread died')[0]!.err).toBe('the event writer thread did not answer within 10000 ms');
    expect(svc.stderr()).toBe('console-backend: the event writer thread did not answer within 10000 ms; exiting\n');
    await checkNextStart(env, job, acked);
  });
});

describe('the system status while the event writer thread hangs in an append', () => {
  it('answers at once and counts a job that ended meanwhile in its final state, which waits in the bus unstored', async () => {
    // The limit far above the test's steps: the status is read while the thread hangs, and the stop waits for the limit.
    const { svc, job, trigger } = await faultyService('event-writer', 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '20000', CONSOLE_KILL_GRACE_MS: '1000' });
    fs.writeFileSync(trigger, '');
    await waitFor(() => (fs.existsSync(`${trigger}.hung`) ? true : undefined), 'the writer thread to hang');
    // Its exit event (with the final state) is published but cannot be stored; the job is ended here all the same.
    process.kill(job.pid, 'SIGTERM');
    await waitFor(async () => ((await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as { state: string }).state !== 'running' || undefined, 'the job to end');
    const status = await fetch(`${svc.url}/api/system-status`);
    expect(status.status).toBe(200);
    const s = (await status.json()) as { jobs: { running: number; byState: Record<string, number> } };
    expect(s.jobs.running).toBe(0);
    expect(s.jobs.byState).toEqual(expect.objectContaining({ running: 0, 'exited ok': 1 }));
    expect(fs.existsSync(`${trigger}.hung`)).toBe(true);
    expect(svc.child.exitCode, 'the service still runs: the hang is not over').toBeNull();
  });
});

describe('a stop (SIGTERM) while the job I/O thread hangs', () => {
  it('ends the streams, then exits 1 once the thread is taken for dead (the jobs’ exits cannot be learnt); the next start marks the job lost', async () => {
    const { svc, env, job, acked, trigger } = await faultyService('job-io', 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '10000', CONSOLE_KILL_GRACE_MS: '1000' });
    const stream = new SseClient(`${svc.url}/api/events/stream`);
    await stream.until((s) => s.status === 200, 'the stream to open');
    fs.writeFileSync(trigger, '');
    await waitFor(() => (fs.existsSync(`${trigger}.hung`) ? true : undefined), 'the job I/O thread to hang');
    process.kill(svc.servicePid(), 'SIGTERM');
    // What was queued is stored and delivered: the streams end whole, not cut at the bound.
    await stream.done;
    expect(svc.child.exitCode).toBeNull();
    expect(await svc.exited).toEqual([1, null]);
    expect(logged(svc, 'streams ended before the queued events were stored')).toEqual([]);
    expect(logged(svc, 'the job I/O thread or its spawn helper process died')[0]!.err).toBe('the job I/O thread did not answer within 10000 ms');
    expect(svc.stderr()).toBe('console-backend: the job I/O thread did not answer within 10000 ms; exiting\n');
    await checkNextStart(env, job, acked);
  });
});

// Piscina's threads are watched alike (process/hang-watch.ts) but replaced rather than fatal: the task left unanswered
// falls back, the tasks queued behind it run on the new thread, and the service serves on.
describe('the housekeeping thread hangs while a job runs', () => {
  it('its task is given up past CONSOLE_THREAD_ANSWER_LIMIT_MS and the thread replaced (logged); a cancel still stops the job; the service serves on', async () => {
    const { svc, job, acked, trigger, post } = await faultyService('housekeeping', 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '2000' });
    fs.writeFileSync(trigger, '');
    // Its kill pass (or a checkpoint before it) is the task the thread takes and never answers.
    expect((await post(`/api/jobs/${job.proposalId}/cancel`, {})).status).toBe(202);
    await waitFor(() => (fs.existsSync(`${trigger}.hung`) ? true : undefined), 'the housekeeping thread to hang');
    const ended = await waitFor(async () => {
      const rec = (await (await fetch(`${svc.url}/api/jobs/${job.proposalId}`)).json()) as { state: string; exitReason: string | null };
      return rec.state === 'running' ? undefined : rec;
    }, 'the cancelled job’s exit');
    expect(ended).toMatchObject({ state: 'exited ok', exitReason: 'cancelled' });
    await waitFor(() => (gone(job.pid) ? true : undefined), 'the job’s process to be gone');
    const replaced = await waitFor(() => logged(svc, 'the housekeeping thread was replaced')[0], 'the replacement logged');
    expect(replaced.err).toBe('the housekeeping thread did not answer within 2000 ms');
    expect(svc.child.exitCode).toBeNull();
    // The new thread serves the next job whole: started, its priority lowered, cancelled, swept.
    const next = await post('/api/proposals/generate', { project: 'harbor-lights' });
    expect(next.status).toBe(202);
    const second = (await next.json()) as { proposalId: string; pid: number };
    cleanups.push(() => killMarked(jobMark(second.proposalId)));
    expect((await post(`/api/jobs/${second.proposalId}/cancel`, {})).status).toBe(202);
    await waitFor(() => (gone(second.pid) ? true : undefined), 'the second job’s process to be gone');
    const stored = new Set((await allEvents(svc.url)).map((e) => e.id));
    expect(acked.filter((id) => !stored.has(id))).toEqual([]);
    expect(logged(svc, 'the housekeeping thread was replaced')).toHaveLength(1);
    expect(await svc.stop()).toEqual([0, null]);
    expect(svc.stderr()).toBe('');
  });
});

describe('the replay thread hangs during a stream’s replay', () => {
  it('the read is given up past CONSOLE_THREAD_ANSWER_LIMIT_MS and made on the main thread (logged): the stream replays whole; the new thread serves the next', async () => {
    // No replay memory: a replay reads the database, through the replay cache, on the replay thread.
    const { svc, acked, trigger, post } = await faultyService('replay', 'hang', { CONSOLE_THREAD_ANSWER_LIMIT_MS: '2000', CONSOLE_SSE_REPLAY_MEMORY_BYTES: '0' });
    const replay = async () => ((await (await fetch(`${svc.url}/api/system-status`)).json()) as { bus: { replay: { cache: { threadReads: number; threadFailures: number } } } }).bus.replay.cache;
    // Unfiltered: a filtered replay reads on the main thread.
    const replayed = async (from: string, count: number) => {
      const stream = new SseClient(`${svc.url}/api/events/stream`, { 'Last-Event-ID': from });
      const mine = () => stream.events.filter((e) => e.scope === 'acked').map((e) => e.id);
      try {
        await stream.until(() => mine().length >= count, 'the acknowledged events replayed');
        return mine();
      } finally {
        stream.close();
      }
    };
    fs.writeFileSync(trigger, '');
    expect(await replayed('0', acked.length)).toEqual(acked);
    expect(fs.existsSync(`${trigger}.hung`)).toBe(true);
    // The log line comes through the service's stdout pipe: it may follow the stream's events.
    const fellBack = await waitFor(() => logged(svc, 'a stream replay read was made on the main thread: the replay thread failed')[0], 'the fallback logged');
    expect(fellBack.err).toBe('the replay thread did not answer within 2000 ms');
    const before = await replay();
    expect(before.threadFailures).toBe(1);
    // Events stored since: read by the new thread.
    const more: string[] = [];
    for (let i = 0; i < 5; i++) more.push(((await (await post('/api/internal/bus', { severity: 'info', scope: 'acked', summary: `after the hang ${i}` })).json()) as { id: string }).id);
    expect(await replayed(acked.at(-1) as string, more.length)).toEqual(more);
    expect((await replay()).threadReads).toBeGreaterThan(before.threadReads);
    expect(logged(svc, 'a stream replay read was made on the main thread')).toHaveLength(1);
    expect(await svc.stop()).toEqual([0, null]);
    expect(svc.stderr()).toBe('');
  });
});
