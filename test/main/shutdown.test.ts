/**
 * Process-level shutdown and restart (api-decisions.md, "Network and safety defaults": on
 * SIGTERM stop accepting, end event streams, kill every job's process tree, publish the
 * exits, close the state database, exit 0; issue text: jobs recorded as running at start-up
 * are marked lost). The service runs as a separate process from the compiled `dist/`.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { startServiceProcess as startProcess } from '../helpers/process.js';
import { fixture, makeTempStore, startTestService, type TestService } from '../helpers/service.js';

const PROJECT = 'harbor-lights';
const TOOL = fixture('gen-grandchild.mjs');

/**
 * The compiled service on `store`, with the grandchild tool and a kill grace never reached: the
 * jobs end by SIGTERM once they run (Node's handler re-raises it), which on a loaded machine
 * took longer than a short grace, and the SIGKILL came first (rc 137).
 */
const startServiceProcess = (store: { dataDir: string; stateDir: string }) => startProcess(store, { DISPATCH_CLI: TOOL, CONSOLE_KILL_GRACE_MS: '60000' }, (fn) => cleanups.push(fn));

/** Cleanup registered by each test: service processes, in-process services, stray pids, temp dirs. */
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

async function generate(url: string): Promise<{ proposalId: string; pid: number }> {
  const res = await fetch(`${url}/api/proposals/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ project: PROJECT }),
  });
  expect(res.status).toBe(202);
  return (await res.json()) as { proposalId: string; pid: number };
}

/** Waits for the "grandchild <pid>" and "ready <pid>" lines of a gen-grandchild.mjs job. */
async function waitForPids(url: string, proposalId: string): Promise<{ child: number; grandchild: number }> {
  return waitFor(async () => {
    const lines = (await allEvents(url, 'scopePrefix=engine/generation')).filter((e) => e.detail?.startsWith(`${proposalId} stdout`));
    const pidOf = (word: string) => lines.find((e) => e.summary.startsWith(`${word} `))?.summary.split(' ')[1];
    const child = pidOf('ready');
    const grandchild = pidOf('grandchild');
    return child && grandchild ? { child: Number(child), grandchild: Number(grandchild) } : undefined;
  }, `pids of ${proposalId}`);
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

/** Kills `pids` at the end of the test whatever its outcome (a failing test must not leak them). */
function reap(pids: number[]): void {
  cleanups.push(() => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });
}

function tempStore() {
  const store = makeTempStore('sample');
  cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  return store;
}

/** Reads an open event stream to its end: `end` for a complete response, else the error. */
async function streamOutcome(res: Response): Promise<string> {
  const reader = res.body!.getReader();
  try {
    for (;;) {
      const { done } = await reader.read();
      if (done) return 'end';
    }
  } catch (err) {
    return `error: ${String(err)}`;
  }
}

describe('SIGTERM', () => {
  it('ends the event streams, kills every job tree, publishes every exit, closes the database and exits 0', async () => {
    const store = tempStore();
    const svc = await startServiceProcess(store);
    const jobs = [];
    for (let i = 0; i < 3; i++) jobs.push(await generate(svc.url));
    const pids = [];
    for (const j of jobs) pids.push(await waitForPids(svc.url, j.proposalId));
    reap(pids.flatMap((p) => [p.child, p.grandchild]));
    const stream = await fetch(`${svc.url}/api/events/stream`);
    expect(stream.status).toBe(200);
    const streamEnd = streamOutcome(stream);

    svc.child.kill('SIGTERM');

    const [code, signal] = await svc.exited;
    expect({ code, signal }, svc.stderr()).toEqual({ code: 0, signal: null });
    // A complete response: the service ended the stream, it was not cut by the process exit.
    expect(await streamEnd).toBe('end');
    for (const p of pids) {
      await waitGone(p.child, 'a job');
      await waitGone(p.grandchild, 'a grandchild');
    }

    const db = new Database(path.join(store.stateDir, 'console-state.db'), { readonly: true, fileMustExist: true });
    try {
      const events = (db.prepare(`select data from events where scope = 'engine/generation' order by id`).all() as { data: string }[]).map((r) => JSON.parse(r.data) as EngineEvent);
      for (const j of jobs) {
        const exits = events.filter((e) => e.payload.proposal_id === j.proposalId && e.summary.startsWith('dispatch_cli exited'));
        expect(exits).toHaveLength(1);
        expect(exits[0]).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=143', payload: { proposal_id: j.proposalId, rc: 143 } });
        // Killed by the shutdown, not cancelled.
        expect(exits[0]?.detail).toBe('terminated by SIGTERM (shutdown)');
      }
      const rows = db.prepare('select proposal_id, state, ended_at, rc, signal, exit_reason, cancel_requested from jobs order by proposal_id').all() as Record<string, unknown>[];
      expect(rows).toHaveLength(3);
      for (const row of rows) {
        expect(row).toMatchObject({ state: 'exited failed', rc: 143, signal: 'SIGTERM', ended_at: expect.any(String) });
        expect(row).toMatchObject({ exit_reason: 'shutdown', cancel_requested: 0 });
      }
    } finally {
      db.close();
    }
  });
});

describe('restart after the service was killed', () => {
  it('marks a job recorded as running lost, with a failure event, and kills its process group', async () => {
    const store = tempStore();
    const first = await startServiceProcess(store);
    const { proposalId } = await generate(first.url);
    const pids = await waitForPids(first.url, proposalId);
    reap([pids.child, pids.grandchild]);

    first.child.kill('SIGKILL');
    await first.exited;
    // The job runs in its own process group: it outlives the service that started it.
    expect(isGone(pids.child)).toBe(false);
    expect(isGone(pids.grandchild)).toBe(false);

    const t: TestService = await startTestService({ tmp: store.tmp, env: { DISPATCH_CLI: TOOL } });
    cleanups.push(() => t.stop());

    const job = (await (await t.get(`/api/jobs/${proposalId}`)).json()) as Record<string, unknown>;
    expect(job).toMatchObject({ proposalId, pid: pids.child, state: 'lost', endedAt: expect.any(String), rc: null });
    // Why it ended, and its lines ("grandchild <pid>", "ready <pid>") counted from its events.
    expect(job).toMatchObject({ exitReason: 'lost', exitDetail: null, stdoutLines: 2, stderrLines: 0 });
    const lost = (await allEvents(t.url, 'scopePrefix=engine/generation')).filter((e) => e.payload.proposal_id === proposalId && e.summary.startsWith('dispatch_cli lost'));
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({
      severity: 'failure',
      scope: 'engine/generation',
      summary: `dispatch_cli lost pid=${pids.child}`,
      payload: { proposal_id: proposalId, pid: pids.child },
    });
    await waitGone(pids.child, 'the lost job');
    await waitGone(pids.grandchild, 'the lost job’s grandchild');
    expect(await (await t.get('/api/jobs?state=running')).json()).toEqual([]);
  });

  it('kills what is left of a lost job’s process group when its leader already ended', async () => {
    const store = tempStore();
    const first = await startServiceProcess(store);
    const { proposalId } = await generate(first.url);
    const pids = await waitForPids(first.url, proposalId);
    reap([pids.child, pids.grandchild]);
    first.child.kill('SIGKILL');
    await first.exited;
    // The tool ends while no service watches it; its grandchild keeps running in its group.
    process.kill(pids.child, 'SIGKILL');
    await waitGone(pids.child, 'the job');
    expect(isGone(pids.grandchild)).toBe(false);

    const t: TestService = await startTestService({ tmp: store.tmp, env: { DISPATCH_CLI: TOOL } });
    cleanups.push(() => t.stop());

    expect(await (await t.get(`/api/jobs/${proposalId}`)).json()).toMatchObject({ state: 'lost' });
    await waitGone(pids.grandchild, 'the lost job’s grandchild');
  });
});
