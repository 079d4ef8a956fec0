/**
 * A job's processes all end with the job, through the real server on port 0:
 * the dispatch tool leaves processes that keep forking (test/fixtures/gen-forking-tree.mjs: a
 * daemon in a session of its own whose parent is gone, and a member of the job's process group
 * that holds its stdout), then exits 0. After the exit event no process holding the job's mark
 * `CONSOLE_JOB_ID=<proposal id>` is left, and the service answered all along: its /proc scans
 * and kill passes run on a worker thread, not on the event loop.
 */
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { readCmdline, readProc, treeProcesses } from '../../src/process/proc-scan.js';
import { waitForJobEvents } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';
import { killMarked } from '../process/helpers.js';

let t: TestService | undefined;
const marks: string[] = [];
afterEach(async () => {
  // Whatever the outcome, nothing of the job outlives the test.
  for (const mark of marks.splice(0)) await killMarked(mark);
  await t?.close();
  t = undefined;
});

/** The service's log lines, parsed (the service runs in this process, with this logger). */
function memoryLogger(): { logger: pino.Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s) as Record<string, unknown>) });
  return { logger, lines };
}

/** Requests /api/health one after the other until `stop` resolves; the time each took, in ms. */
async function pollHealth(url: string, stop: Promise<unknown>): Promise<number[]> {
  let done = false;
  void stop.finally(() => (done = true));
  const took: number[] = [];
  while (!done) {
    const t0 = performance.now();
    const res = await fetch(`${url}/api/health`);
    expect(res.status).toBe(200);
    await res.body?.cancel();
    took.push(performance.now() - t0);
  }
  return took;
}

describe('the sweep after a job’s exit', () => {
  it.each([
    ['a daemon in a session of its own, parent gone, that keeps forking', 'daemon'],
    ['that daemon and a member of the job’s group holding its stdout, both forking', 'daemon+group'],
  ])('kills every process of the tree: %s', async (_name, model) => {
    const { logger, lines } = memoryLogger();
    // Every process killed is the point here, not the sweep's time bound (tested below): on a busy
    // machine a pass over two forkers' trees can take seconds, and the default 5 s would stop it.
    t = await startTestService({ env: { DISPATCH_CLI: fixture('gen-forking-tree.mjs'), CONSOLE_SWEEP_MAX_MS: '600000' }, logger });
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights', model });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    const mark = `CONSOLE_JOB_ID=${proposalId}`;
    marks.push(mark);

    const events = waitForJobEvents(t.url, proposalId);
    const health = await pollHealth(t.url, events);
    const { exit, lines: out } = await events;

    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0', detail: null, payload: { proposal_id: proposalId, rc: 0 } });
    const tree = out
      .find((e) => e.summary.startsWith('tree '))
      ?.summary.split(' ')
      .map(Number);
    expect(tree, 'the tool’s "tree" line').toBeDefined();
    const [, daemon, children] = tree as number[];
    expect(children).toBeGreaterThanOrEqual(150);
    // Nothing holding the job's mark is alive once its exit is published (zombies are dead:
    // this container's PID 1 does not reap the orphans).
    const left = treeProcesses(null, null, mark);
    const survivors = left.map((p) => ({ ...readProc(p.pid), cmdline: readCmdline(p.pid)?.join(' ') }));
    expect(
      left.map((p) => p.pid),
      `the daemon was ${daemon}; survivors: ${JSON.stringify(survivors)}`,
    ).toEqual([]);
    expect(treeProcesses(daemon as number, null)).toEqual([]);

    const jobLines = lines.filter((l) => (l.job as { proposalId?: string } | undefined)?.proposalId === proposalId);
    const swept = jobLines.find((l) => l.msg === 'job leftovers killed');
    expect(swept, `the log line "job leftovers killed"; the job's lines: ${JSON.stringify(jobLines.map((l) => [l.msg, l.leftovers]))}`).toBeDefined();
    const { killed, passes, ms } = (swept?.leftovers ?? {}) as { killed: number; passes: number; ms: number };
    // Each child is two processes: hundreds were killed.
    expect(killed).toBeGreaterThan(children as number);
    const worst = Math.max(...health);
    console.log(
      `leftover sweep (${model}): ${children} children of the daemon when the tool exited; ${killed} processes killed in ${passes} passes, ${ms} ms; ` +
        `${health.length} health requests meanwhile, slowest ${worst.toFixed(1)} ms`,
    );
    // A ceiling, not a timing: it guards against a scan that holds the event loop for seconds.
    expect(worst).toBeLessThan(2000);
  });
});

describe('the sweep takes the sessions of the tree', () => {
  it('kills an orphan without the mark in the session of a daemon the tool left', async () => {
    t = await startTestService({ env: { DISPATCH_CLI: fixture('gen-session-orphan.mjs') } });
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    marks.push(`CONSOLE_JOB_ID=${proposalId}`);
    const { exit, lines: out } = await waitForJobEvents(t.url, proposalId);
    expect(exit).toMatchObject({ severity: 'success', payload: { proposal_id: proposalId, rc: 0 } });
    const tree = out
      .find((e) => e.summary.startsWith('tree '))
      ?.summary.split(' ')
      .map(Number);
    expect(tree, 'the tool’s "tree" line').toBeDefined();
    const [, daemon, orphan] = tree as number[];
    try {
      // Gone, or a zombie (this container's PID 1 does not reap orphans).
      for (const pid of [daemon, orphan] as number[]) expect(readProc(pid)?.state ?? 'gone', `pid ${pid}`).toMatch(/^(gone|Z)$/);
    } finally {
      try {
        process.kill(orphan as number, 'SIGKILL');
      } catch {}
    }
  });
});

describe('a sweep stopped by its bound', () => {
  it('reports the survivors: a warning event before the exit event, and an error log line; system status shows the bounds', async () => {
    const { logger, lines } = memoryLogger();
    t = await startTestService({
      env: { DISPATCH_CLI: fixture('gen-forking-tree.mjs'), FORKING_TARGET: '40', CONSOLE_SWEEP_MAX_PASSES: '1', CONSOLE_SWEEP_MAX_MS: '60000' },
      logger,
    });
    const status = (await (await t.get('/api/system-status')).json()) as { limits: Record<string, number> };
    expect(status.limits).toMatchObject({ CONSOLE_SWEEP_MAX_PASSES: 1, CONSOLE_SWEEP_MAX_MS: 60000 });
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
    const { proposalId } = (await res.json()) as { proposalId: string };
    marks.push(`CONSOLE_JOB_ID=${proposalId}`);

    const { all, exit } = await waitForJobEvents(t.url, proposalId);
    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0', payload: { proposal_id: proposalId, rc: 0 } });
    const warning = all.find((e) => e.summary.startsWith('dispatch_cli leftovers survived: '));
    expect(warning).toMatchObject({ severity: 'warning', scope: 'engine/generation', payload: { proposal_id: proposalId, passes: 1 } });
    const n = Number(warning!.summary.split(': ')[1]);
    expect(n).toBeGreaterThan(40); // one pass: all it found, SIGKILLed but not seen gone
    expect(warning!.payload.left).toBe(n);
    expect(warning!.detail).toMatch(new RegExp(`^${n} processes were still running after 1 kill passes in \\d+ ms \\(pids [\\d ]+( …)?\\)$`));
    expect(Number(warning!.id)).toBeLessThan(Number(exit.id));
    const logged = lines.find((l) => l.msg === 'job processes survived the leftover sweep');
    expect(logged).toMatchObject({ level: 50, job: { proposalId }, leftovers: { passes: 1, killed: n } });
    expect((logged!.leftovers as { left: number[] }).left).toHaveLength(n);
  });
});
