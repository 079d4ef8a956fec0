/**
 * Backpressure on the jobs' output (src/supervisor/output-gate.ts): while
 * the bus holds CONSOLE_EVENT_BACKLOG_MAX events it has not stored (here: the state database's
 * disk is full), the jobs' pipes are not read and the child blocks in its own write, instead
 * of the service holding every line it prints (it held them all, and dropped the oldest past
 * 100,000). Once events are stored again the output flows on: every line stored once and in
 * order, none lost; how often and how long the output was held is in the system status and
 * the metrics. A job that exits while its output is held keeps its lines: its pipes are read to
 * the end once the output flows again, however long it was held (they were destroyed a grace
 * period after the exit, lines in them). Real faults: a small tmpfs that fills (root and
 * mount(8), as in CI).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { fixture, SAMPLE_STORE, startTestService, type TestService } from '../helpers/service.js';
import { canMount, fillDisk, mountTmpfs } from '../helpers/mounts.js';

const LINES = 12_000;
/** Lines of the job that exits while the output is held. */
const LATE = 1000;
const BACKLOG_MAX = 1000;
const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface Backpressure {
  backlogMax: number;
  paused: boolean;
  pauses: number;
  pausedMs: number;
}

it('this machine can mount file systems for the test (root, mount(8))', () => {
  expect(canMount(), 'the backpressure test needs root and mount(8), as CI has').toBe(true);
});

it('holds the jobs’ output while events cannot be stored, then stores every line once and in order', async () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'backpressure-'));
  cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
  const store = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, store, { recursive: true });
  const stateDir = path.join(tmp, 'state');
  cleanups.push(mountTmpfs(stateDir, '32m'));
  const go = path.join(tmp, 'go');
  const t: TestService = await startTestService({
    store: { dir: store },
    tmp,
    env: {
      CONSOLE_DATA_DIR: store,
      CONSOLE_STATE_DIR: stateDir,
      DISPATCH_CLI: fixture('flood-on-go.mjs'),
      FLOOD_GO: go,
      FLOOD_LINES: String(LINES),
      CONSOLE_EVENT_BACKLOG_MAX: String(BACKLOG_MAX),
      // At the service's priority: on a busy machine a niced tool would take long to start.
      CONSOLE_JOB_NICE: '0',
      // The shortest wait for a pipe that stays silent after its job exited (1 s).
      CONSOLE_KILL_GRACE_MS: '0',
    },
  });
  cleanups.push(() => t.stop());
  const status = async () => (await (await t.get('/api/system-status')).json()) as { jobs: { backpressure: Backpressure }; limits: Record<string, number> };
  expect((await status()).limits.CONSOLE_EVENT_BACKLOG_MAX).toBe(BACKLOG_MAX);
  expect((await status()).jobs.backpressure).toEqual({ backlogMax: BACKLOG_MAX, paused: false, pauses: 0, pausedMs: 0 });

  const r = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
  expect(r.status).toBe(202);
  const { proposalId } = (await r.json()) as { proposalId: string };
  // A second job writes its lines once the output is held, and exits.
  const r2 = await t.post('/api/proposals/generate', { project: 'harbor-lights', shotId: `late${LATE}` });
  expect(r2.status).toBe(202);
  const late = (await r2.json()) as { proposalId: string; pid: number };

  // The disk fills, then the tool floods: no event can be stored.
  const filler = fillDisk(stateDir);
  cleanups.push(() => fs.rmSync(filler.file, { force: true }));
  fs.writeFileSync(go, '');
  // Held for the full disk: paused while the state database refuses the events (`/api/ready` says so). On a loaded
  // machine the gate may first close while the event writer thread catches up with the flood, and open again.
  const refusing = async () => ((await (await t.get('/api/ready')).json()) as { checks: { name: string; ok: boolean }[] }).checks.some((c) => c.name === 'stateDatabase' && !c.ok);
  const held = await waitFor(async () => {
    if (!(await refusing())) return undefined;
    const s = await status();
    return s.jobs.backpressure.paused ? s.jobs.backpressure : undefined;
  }, 'the output to be held');
  // Once for the full disk; on a loaded machine also before it refused (the event writer thread, below the main
  // thread's priority, fell behind the flood while the WAL still had room, then caught up and the gate opened).
  expect(held.pauses).toBeGreaterThanOrEqual(1);
  // Held: the service reads no more lines (the tool is blocked in its write).
  const lines = async () => ((await (await t.get(`/api/jobs/${proposalId}`)).json()) as { stdoutLines: number; state: string }).stdoutLines;
  const first = await lines();
  await new Promise((r) => setTimeout(r, 500));
  expect(await lines()).toBe(first);
  expect(first).toBeLessThan(LINES);
  // Some lines are stored before the first write fails (the state database's WAL file reuses the
  // room it already has, how much depends on what was written before); past them, at most the
  // bound is read and left unstored. Reads serve stored events only, so they count the first.
  const mineOf = (events: EngineEvent[]) => events.filter((e: EngineEvent) => e.detail?.startsWith(`${proposalId} stdout line `));
  const storedBefore = mineOf(await allEvents(t.url, 'scopePrefix=engine/generation')).length;
  expect(first - storedBefore).toBeGreaterThan(0);
  expect(first - storedBefore).toBeLessThanOrEqual(BACKLOG_MAX);
  // The late job prints into its pipe and exits; its output stays held well past the grace.
  fs.writeFileSync(`${go}-late`, '');
  await waitFor(() => (fs.existsSync(`/proc/${late.pid}`) && !fs.readFileSync(`/proc/${late.pid}/stat`, 'utf8').includes(') Z') ? undefined : true), 'the late job to exit');
  await new Promise((r) => setTimeout(r, 2500));
  expect((await status()).jobs.backpressure.paused).toBe(true);

  // Room again: the held events are stored, the output flows on, the job ends.
  fs.rmSync(filler.file);
  const job = await waitFor(async () => {
    const j = (await (await t.get(`/api/jobs/${proposalId}`)).json()) as { stdoutLines: number; state: string };
    return j.state === 'running' ? undefined : j;
  }, 'the job to end');
  expect(job).toMatchObject({ state: 'exited ok', stdoutLines: LINES });
  const after = (await status()).jobs.backpressure;
  expect(after.paused).toBe(false);
  expect(after.pauses).toBeGreaterThanOrEqual(1);
  expect(after.pausedMs).toBeGreaterThan(0);
  const metrics = await (await t.get('/api/metrics')).text();
  expect(metrics).toMatch(/^console_job_output_pauses_total [1-9]/m);
  expect(metrics).toMatch(/^console_job_output_paused_seconds_total 0\.\d*[1-9]|^console_job_output_paused_seconds_total [1-9]/m);

  // Every line stored once, in order, then the exit; the bus never held much more than the bound.
  const events = await allEvents(t.url, 'scopePrefix=engine/generation');
  const mine = mineOf(events);
  expect(mine.map((e) => Number(e.detail!.split(' ').at(-1)))).toEqual(Array.from({ length: LINES }, (_v, i) => i + 1));
  expect(mine.map((e) => e.summary.split(' ')[1])).toEqual(Array.from({ length: LINES }, (_v, i) => String(i + 1)));
  const exit = events.findIndex((e) => e.payload.proposal_id === proposalId && e.summary.startsWith('dispatch_cli exited'));
  expect(exit).toBeGreaterThan(events.indexOf(mine.at(-1) as EngineEvent));
  // The late job's every line too, then its exit.
  const lateJob = await waitFor(async () => {
    const j = (await (await t.get(`/api/jobs/${late.proposalId}`)).json()) as { stdoutLines: number; state: string };
    return j.state === 'running' ? undefined : j;
  }, 'the late job to end');
  expect(lateJob).toMatchObject({ state: 'exited ok', stdoutLines: LATE });
  const lateLines = (await allEvents(t.url, 'scopePrefix=engine/generation')).filter((e: EngineEvent) => e.detail?.startsWith(`${late.proposalId} stdout line `));
  expect(lateLines.map((e) => Number(e.detail!.split(' ').at(-1)))).toEqual(Array.from({ length: LATE }, (_v, i) => i + 1));
  const outage = (await allEvents(t.url, 'scopePrefix=service/state'))[0];
  expect(outage?.payload).toMatchObject({ dropped: 0 });
  expect((outage?.payload as { held: number } | undefined)?.held).toBeLessThan(BACKLOG_MAX + 1024);
  console.log(
    `backpressure: ${first} of ${LINES} lines read before the output was held, ${storedBefore} of them stored (${BACKLOG_MAX} unstored events); at most ${(outage?.payload as { held: number } | undefined)?.held} events held; held ${after.pausedMs} ms in ${after.pauses} pause(s); every line stored in order`,
  );
});
