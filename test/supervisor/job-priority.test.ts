/**
 * Generation jobs run below the service's CPU priority (src/process/lower-priority.ts):
 * each job gets CONSOLE_JOB_NICE as its nice value and, under autogroup scheduling (where each
 * job, the leader of its own session, is a scheduling group weighted as much as the whole
 * service), as its autogroup's nice value. Terminals are not touched. A job that ends before
 * its priority is lowered is counted as refused and holds no later spawn (the spawn pacer waits
 * for each job's first lowering try).
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { DISPATCH_CLI: fixture('brief-or-forever.mjs'), CONSOLE_JOB_NICE: '13' } });
});
afterAll(() => t.close());

/** The nice value of `pid` (field 19 of /proc/<pid>/stat). */
const niceOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
};
const status = async () => (await (await t.get('/api/system-status')).json()) as { jobs: { priority: { nice: number; lowered: number; refused: number } }; limits: Record<string, number> };
const autogroups = fs.existsSync('/proc/sys/kernel/sched_autogroup_enabled') && fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';

it('lowers each job’s priority, and its autogroup’s, to CONSOLE_JOB_NICE', async () => {
  const r = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
  expect(r.status).toBe(202);
  const { proposalId, pid } = (await r.json()) as { proposalId: string; pid: number };
  const priority = await waitFor(async () => {
    const s = (await status()).jobs.priority;
    return s.lowered + s.refused > 0 ? s : undefined;
  }, 'the priority to be lowered');
  expect(priority).toEqual({ nice: 13, lowered: 1, refused: 0 });
  expect((await status()).limits.CONSOLE_JOB_NICE).toBe(13);
  expect(niceOf(pid)).toBe(13);
  expect(niceOf(process.pid), 'the service itself keeps its priority').toBe(0);
  if (autogroups) expect(fs.readFileSync(`/proc/${pid}/autogroup`, 'utf8')).toMatch(/ nice 13$/m);
  else console.log('job-priority: this kernel does not schedule by autogroup; only the nice value was checked');
  expect((await t.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);
});

it('answers a job’s 202 with the job already at CONSOLE_JOB_NICE, process and autogroup', async () => {
  const r = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
  expect(r.status).toBe(202);
  const { proposalId, pid } = (await r.json()) as { proposalId: string; pid: number };
  // Read at the 202, with no wait (the spawn helper lowers it right after its exec, before reporting its pid).
  expect(niceOf(pid)).toBe(13);
  if (autogroups) expect(fs.readFileSync(`/proc/${pid}/autogroup`, 'utf8')).toMatch(/ nice 13$/m);
  expect((await t.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);
});

it('lowers a long job amid a churn of jobs that end at once, counts every job once, and holds no spawn', async () => {
  const before = (await status()).jobs.priority;
  const launch = async (shotId: string) => {
    const r = await t.post('/api/proposals/generate', { project: 'harbor-lights', shotId });
    expect(r.status, await r.clone().text()).toBe(202);
    return (await r.json()) as { proposalId: string; pid: number };
  };
  // 40 jobs that exit at once, launched together with one that stays, in the middle of them.
  const brief = Array.from({ length: 40 }, () => launch('brief'));
  const long = launch('sh010');
  const after = Array.from({ length: 20 }, () => launch('brief'));
  const briefJobs = await Promise.all([...brief, ...after]);
  const longJob = await long;
  // Every brief job ends (none is left waiting for its priority).
  for (const { proposalId } of briefJobs) {
    await waitFor(async () => {
      const j = (await (await t.get(`/api/jobs/${proposalId}`)).json()) as { state: string };
      return j.state === 'running' ? undefined : j;
    }, `brief job ${proposalId} to end`);
  }
  // Each of the 61 jobs is counted once, lowered or refused (those that ended first).
  const priority = await waitFor(async () => {
    const s = (await status()).jobs.priority;
    return s.lowered + s.refused - before.lowered - before.refused >= 61 ? s : undefined;
  }, 'every job of the churn to be counted');
  expect(priority.lowered + priority.refused - before.lowered - before.refused).toBe(61);
  expect(niceOf(longJob.pid)).toBe(13);
  if (autogroups) expect(fs.readFileSync(`/proc/${longJob.pid}/autogroup`, 'utf8')).toMatch(/ nice 13$/m);
  // The pacer is free: a job launched after the churn starts and is lowered too.
  const next = await launch('sh010');
  await waitFor(() => (niceOf(next.pid) === 13 ? true : undefined), 'the next job to be lowered');
  for (const j of [longJob, next]) expect((await t.post(`/api/jobs/${j.proposalId}/cancel`)).status).toBe(202);
});
