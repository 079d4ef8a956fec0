/**
 * Generation jobs run below the service's CPU priority (src/process/lower-priority.ts):
 * each job gets CONSOLE_JOB_NICE as its nice value and, under autogroup scheduling (where each
 * job, the leader of its own session, is a scheduling group weighted as much as the whole
 * service), as its autogroup's nice value. Terminals are not touched.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

let t: TestService;
beforeAll(async () => {
  t = await startTestService({ env: { DISPATCH_CLI: fixture('forever.mjs'), CONSOLE_JOB_NICE: '13' } });
});
afterAll(() => t.close());

/** The nice value of `pid` (field 19 of /proc/<pid>/stat). */
const niceOf = (pid: number) => {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
};
const autogroups = fs.existsSync('/proc/sys/kernel/sched_autogroup_enabled') && fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';

it('lowers each job’s priority, and its autogroup’s, to CONSOLE_JOB_NICE', async () => {
  const r = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
  expect(r.status).toBe(202);
  const { proposalId, pid } = (await r.json()) as { proposalId: string; pid: number };
  const status = async () => (await (await t.get('/api/system-status')).json()) as { jobs: { priority: { nice: number; lowered: number; refused: number } }; limits: Record<string, number> };
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
