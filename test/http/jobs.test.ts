/**
 * Generation jobs through the real server (api-decisions.md, "Service routes with partial
 * shape": Jobs): listing, one job, and cancellation of the whole process tree.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents, waitFor, waitForJobEvents, type EngineEvent } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

const PROJECT = 'harbor-lights';
const JOB_FIELDS = ['argv', 'cancelRequested', 'endedAt', 'exitDetail', 'exitReason', 'pid', 'projectId', 'proposalId', 'rc', 'signal', 'startedAt', 'stderrLines', 'stdoutLines', 'state'].sort();
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

interface Job {
  proposalId: string;
  projectId: string;
  pid: number | null;
  argv: string[];
  state: string;
  startedAt: string;
  endedAt: string | null;
  rc: number | null;
  signal: string | null;
  stdoutLines: number;
  stderrLines: number;
  cancelRequested: boolean;
  exitReason: string | null;
  exitDetail: string | null;
}

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/**
 * The kill grace. A job ends by SIGTERM only once it runs: Node catches SIGTERM (to restore the
 * terminal) and then raises it again. On a loaded machine a job, at CONSOLE_JOB_NICE 19, waited
 * more than 300 ms for the CPU, and the SIGKILL ended it first (rc 137). So the SIGTERM path is
 * checked with a grace it never reaches, a safety net; the SIGKILL path with the service's
 * default grace, for the job to see the SIGTERM first.
 */
const NEVER_REACHED_GRACE_MS = '60000';
const DEFAULT_GRACE_MS = '5000';

async function start(tool: string, env: Record<string, string> = {}): Promise<TestService> {
  t = await startTestService({ env: { DISPATCH_CLI: tool, CONSOLE_KILL_GRACE_MS: NEVER_REACHED_GRACE_MS, ...env } });
  return t;
}

async function generate(svc: TestService): Promise<{ proposalId: string; pid: number }> {
  const res = await svc.post('/api/proposals/generate', { project: PROJECT });
  expect(res.status).toBe(202);
  return (await res.json()) as { proposalId: string; pid: number };
}

async function getJob(svc: TestService, id: string): Promise<Job> {
  const res = await svc.get(`/api/jobs/${id}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Job;
}

async function listJobs(svc: TestService, query = ''): Promise<Job[]> {
  const res = await svc.get(`/api/jobs${query}`);
  expect(res.status).toBe(200);
  return (await res.json()) as Job[];
}

/** Waits for a stdout line of the job that starts with `prefix`; returns it. */
async function waitForLine(svc: TestService, proposalId: string, prefix: string): Promise<string> {
  return waitFor(async () => {
    const evs = await allEvents(svc.url, 'scopePrefix=engine/generation');
    return evs.find((e) => e.detail?.startsWith(`${proposalId} stdout`) && e.summary.startsWith(prefix))?.summary;
  }, `line "${prefix}…" of ${proposalId}`);
}

/**
 * True once `pid` has terminated. A zombie counts as gone: an orphaned process that died is
 * reaped by init, and where init does not reap (some container init processes), `kill(pid, 0)`
 * keeps succeeding on the zombie although nothing runs any more.
 */
function isGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return true;
    throw err;
  }
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z');
  } catch {
    return true;
  }
}

const waitGone = (pid: number, what: string) => waitFor(() => (isGone(pid) ? true : undefined), `${what} (pid ${pid}) to end`);

describe('GET /api/jobs', () => {
  it('is empty before any request', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    expect(await listJobs(svc)).toEqual([]);
  });

  it('lists jobs newest first with the fields of the Job schema', async () => {
    const tool = fixture('print-lines.mjs');
    const svc = await start(tool);
    const accepted = [];
    for (let i = 0; i < 3; i++) accepted.push(await generate(svc));
    for (const a of accepted) await waitForJobEvents(svc.url, a.proposalId);

    const jobs = await listJobs(svc);

    expect(jobs.map((j) => j.proposalId)).toEqual(accepted.map((a) => a.proposalId).reverse());
    for (const job of jobs) {
      const a = accepted.find((x) => x.proposalId === job.proposalId)!;
      expect(Object.keys(job).sort()).toEqual(JOB_FIELDS);
      expect(job).toMatchObject({
        projectId: PROJECT,
        pid: a.pid,
        argv: [process.execPath, tool, '--project', PROJECT],
        state: 'exited ok',
        rc: 0,
        signal: null,
        stdoutLines: 3,
        stderrLines: 1,
        cancelRequested: false,
        // Why it ended: by itself; no failure, so nothing more to say.
        exitReason: 'exited',
        exitDetail: null,
      });
      expect(job.startedAt).toMatch(ISO);
      expect(job.endedAt).toMatch(ISO);
      expect(job.endedAt! >= job.startedAt).toBe(true);
    }
  });

  it('filters by state and bounds by limit; a bad filter is a 422', async () => {
    const svc = await start(fixture('print-lines.mjs'));
    const accepted = [];
    for (let i = 0; i < 3; i++) accepted.push(await generate(svc));
    for (const a of accepted) await waitForJobEvents(svc.url, a.proposalId);

    expect((await listJobs(svc, '?limit=2')).map((j) => j.proposalId)).toEqual([accepted[2]!.proposalId, accepted[1]!.proposalId]);
    expect(await listJobs(svc, '?state=running')).toEqual([]);
    expect(await listJobs(svc, `?state=${encodeURIComponent('exited ok')}`)).toHaveLength(3);
    for (const q of ['?state=bogus', '?limit=0', '?limit=501', '?limit=x']) {
      const res = await svc.get(`/api/jobs${q}`);
      expect(res.status, q).toBe(422);
      expect(((await res.json()) as { detail: { loc: unknown[] }[] }).detail[0]!.loc[0]).toBe('query');
    }
  });

  it('shows a running job with live line counts', async () => {
    const svc = await start(fixture('gen-grandchild.mjs'));
    const { proposalId, pid } = await generate(svc);
    await waitForLine(svc, proposalId, 'ready ');

    // Both lines ("grandchild <pid>", "ready <pid>") are counted while the job still runs.
    const listed = await waitFor(async () => {
      const job = (await listJobs(svc)).find((j) => j.proposalId === proposalId);
      return job?.stdoutLines === 2 ? job : undefined;
    }, 'live line count in the list');
    expect(listed).toMatchObject({ proposalId, pid, state: 'running', endedAt: null, rc: null, signal: null, stdoutLines: 2, stderrLines: 0, exitReason: null, exitDetail: null });
    expect(await getJob(svc, proposalId)).toMatchObject({ state: 'running', stdoutLines: 2, stderrLines: 0, cancelRequested: false });
    expect(await listJobs(svc, '?state=running')).toHaveLength(1);
  });
});

describe('GET /api/jobs/{proposalId}', () => {
  it('returns one job, finished', async () => {
    const svc = await start(fixture('exit-3.mjs'));
    const { proposalId, pid } = await generate(svc);
    await waitForJobEvents(svc.url, proposalId);

    const job = await getJob(svc, proposalId);

    expect(Object.keys(job).sort()).toEqual(JOB_FIELDS);
    expect(job).toMatchObject({ proposalId, pid, state: 'exited failed', rc: 3, signal: null, stdoutLines: 1, stderrLines: 1 });
    // Why it failed: it ended by itself, and its last stderr line says why.
    expect(job).toMatchObject({ exitReason: 'exited', exitDetail: 'something went wrong' });
  });

  it('answers 404 for an unknown id and 400 for a malformed one', async () => {
    const svc = await start(fixture('print-lines.mjs'));

    const unknown = await svc.get('/api/jobs/gen_000000000000');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { detail: string }).detail).toContain('gen_000000000000');

    for (const bad of ['bad..id', '.hidden', '%2E%2E%2Fetc']) {
      const res = await svc.get(`/api/jobs/${bad}`);
      expect(res.status, bad).toBe(400);
      expect(typeof ((await res.json()) as { detail: unknown }).detail).toBe('string');
    }
  });
});

describe('POST /api/jobs/{proposalId}/cancel', () => {
  it('answers 202, then the job ends by SIGTERM: a failure exit event with rc 143 and state exited failed', async () => {
    const svc = await start(fixture('forever.mjs'));
    const { proposalId } = await generate(svc);
    await waitForLine(svc, proposalId, 'ready ');

    const res = await svc.post(`/api/jobs/${proposalId}/cancel`);

    expect(res.status).toBe(202);
    const body = (await res.json()) as Job;
    expect(Object.keys(body).sort()).toEqual(JOB_FIELDS);
    expect(body).toMatchObject({ proposalId, cancelRequested: true });
    const { exit } = await waitForJobEvents(svc.url, proposalId);
    expect(exit).toMatchObject({ severity: 'failure', scope: 'engine/generation', summary: 'dispatch_cli exited rc=143' });
    expect(exit.payload).toEqual({ proposal_id: proposalId, rc: 143 });
    expect(await getJob(svc, proposalId)).toMatchObject({ state: 'exited failed', rc: 143, signal: 'SIGTERM', cancelRequested: true, endedAt: expect.stringMatching(ISO) });
    // Why it ended; it wrote nothing on stderr.
    expect(await getJob(svc, proposalId)).toMatchObject({ exitReason: 'cancelled', exitDetail: null });
    expect(exit.detail).toBe('terminated by SIGTERM (cancelled)');
  });

  it('a job that ignores SIGTERM is ended by SIGKILL after the grace period (rc 137)', async () => {
    const svc = await start(fixture('gen-ignore-term.mjs'), { CONSOLE_KILL_GRACE_MS: DEFAULT_GRACE_MS });
    const { proposalId, pid } = await generate(svc);
    await waitForLine(svc, proposalId, 'ready ');

    expect((await svc.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);

    const { exit, lines } = await waitForJobEvents(svc.url, proposalId);
    // It did receive the SIGTERM first.
    expect(lines.map((e: EngineEvent) => e.summary)).toContain('ignoring SIGTERM');
    expect(exit).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=137', payload: { proposal_id: proposalId, rc: 137 } });
    expect(await getJob(svc, proposalId)).toMatchObject({ state: 'exited failed', rc: 137, signal: 'SIGKILL' });
    expect(isGone(pid)).toBe(true);
  });

  it('answers 409 for a job that already exited, 404 for an unknown id and 400 for a malformed one', async () => {
    const svc = await start(fixture('print-lines.mjs'));
    const { proposalId } = await generate(svc);
    await waitForJobEvents(svc.url, proposalId);

    const exited = await svc.post(`/api/jobs/${proposalId}/cancel`);
    expect(exited.status).toBe(409);
    expect(typeof ((await exited.json()) as { detail: unknown }).detail).toBe('string');
    expect(await getJob(svc, proposalId)).toMatchObject({ state: 'exited ok', rc: 0, cancelRequested: false });

    expect((await svc.post('/api/jobs/gen_000000000000/cancel')).status).toBe(404);
    expect((await svc.post('/api/jobs/bad..id/cancel')).status).toBe(400);
  });

  it('kills the grandchild in the job’s process group too', async () => {
    const svc = await start(fixture('gen-grandchild.mjs'));
    const { proposalId, pid } = await generate(svc);
    const grandchild = Number((await waitForLine(svc, proposalId, 'grandchild ')).split(' ')[1]);
    await waitForLine(svc, proposalId, 'ready ');
    expect(isGone(grandchild)).toBe(false);

    expect((await svc.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);

    const { exit } = await waitForJobEvents(svc.url, proposalId);
    expect(exit.payload).toEqual({ proposal_id: proposalId, rc: 143 });
    await waitGone(pid, 'the job');
    await waitGone(grandchild, 'the grandchild');
  });

  it('kills a grandchild that left the job’s process group (the whole process tree)', async () => {
    const svc = await start(fixture('gen-detached-grandchild.mjs'));
    const { proposalId, pid } = await generate(svc);
    const grandchild = Number((await waitForLine(svc, proposalId, 'grandchild ')).split(' ')[1]);
    await waitForLine(svc, proposalId, 'ready ');
    try {
      expect((await svc.post(`/api/jobs/${proposalId}/cancel`)).status).toBe(202);

      await waitForJobEvents(svc.url, proposalId);
      await waitGone(pid, 'the job');
      await waitGone(grandchild, 'the detached grandchild');
    } finally {
      try {
        process.kill(grandchild, 'SIGKILL'); // never leave it running, whatever the outcome
      } catch {
        // already gone
      }
    }
  });
});
