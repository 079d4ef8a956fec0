/**
 * The supervisor on its own, without HTTP: a real SQLite state database
 * in a temp dir, the real bus and process worker, real fixture tools. Starting, line
 * events, the exit after the last line, cancel, final states the database refused (kept,
 * served, stored by the retry), and the start-up recovery of jobs a previous run left.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { SqliteCommitter } from '../../src/state/sqlite/committer.js';
import type { BusEvent, JobStart } from '../../src/bus/event.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import { HousekeepingThread } from '../../src/process/index.js';
import { JobIo } from '../../src/supervisor/index.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';
import { ProposalsRepo } from '../../src/state/sqlite/proposals-repo.js';
import { SqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import { JobNotRunningError, Supervisor, ToolMissingError, UnknownJobError, type GenerationRequest } from '../../src/supervisor/index.js';
import { waitFor } from '../helpers/events.js';
import { fixture } from '../helpers/service.js';

let tmp: string;
let db: Db;
let bus: EventBus;
let state: SqliteStateStore;
let procs: HousekeepingThread;
let io: JobIo;
const events: BusEvent[] = [];

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'supervisor-'));
  db = openStateDb(path.join(tmp, 'state.db'));
  const eventLog = new EventLog(db, 100_000);
  bus = new EventBus(eventLog, { retryMs: 20 });
  state = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 100_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog });
  bus.subscribe((batch) => events.push(...batch.map((r) => JSON.parse(r.data) as BusEvent)));
  procs = new HousekeepingThread(WORKER_FILES.proc);
  io = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: true }, (err) => {
    throw err;
  });
});

afterAll(async () => {
  bus.close();
  await procs.close();
  await io.close();
  db.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const REQ: GenerationRequest = { project: 'p1', shotId: null, model: null, dryRun: false, episode: null, modality: 'video_i2v' };

function supervisor(tool: string, over: Partial<ConstructorParameters<typeof Supervisor>[4]> = {}, committer = new SqliteCommitter(state, bus)): Supervisor {
  return new Supervisor(bus, committer, procs, io, {
    instanceId: 'local',
    dispatchCli: tool,
    childEnv: { PATH: process.env.PATH ?? '' },
    maxRunning: 4,
    retryAfterSeconds: 1,
    killGraceMs: 500,
    lineMaxBytes: 1024,
    historySize: 1000,
    sweep: { maxPasses: 10, maxMs: 2000 },
    ...over,
  });
}

const ofJob = (id: string) => events.filter((e) => e.payload.proposal_id === id || (e.detail ?? '').startsWith(`${id} `));

it('runs a job: recorded with its pending proposal, a spawn event, every line in order, then the exit', async () => {
  const sup = supervisor(fixture('print-lines.mjs'));
  const exits: string[] = [];
  sup.onExit((j) => exits.push(j.proposalId));
  const job = await sup.start(REQ);
  expect(job).toMatchObject({ state: 'running', projectId: 'p1', argv: [process.execPath, fixture('print-lines.mjs'), '--project', 'p1'] });
  expect(new ProposalsRepo(db).get(job.proposalId)).toMatchObject({ kind: 'GenerationProposal', status: 'pending' });
  await waitFor(() => (exits.includes(job.proposalId) ? true : undefined), 'the exit');
  bus.flush();
  const mine = ofJob(job.proposalId).map((e) => e.summary);
  expect(mine[0]).toMatch(/^dispatch_cli spawned pid=\d+$/);
  expect(mine.filter((s) => s.startsWith('out '))).toEqual(['out 1', 'out 2', 'out 3']);
  expect(mine.at(-1)).toBe('dispatch_cli exited rc=0');
  expect(await sup.get(job.proposalId)).toMatchObject({ state: 'exited ok', rc: 0, stdoutLines: 3, stderrLines: 1 });
  expect(sup.runningCount).toBe(0);
});

it('refuses a missing tool before anything starts, and unknown or finished jobs on cancel', async () => {
  const missing = supervisor(path.join(tmp, 'no-such-tool.js'));
  await expect(missing.start(REQ)).rejects.toThrow(ToolMissingError);
  expect(missing.startedCount).toBe(0);
  const sup = supervisor(fixture('exit-3.mjs'));
  await expect(sup.cancel('gen_000000000000')).rejects.toThrow(UnknownJobError);
  const job = await sup.start(REQ);
  await waitFor(() => (sup.runningCount === 0 ? true : undefined), 'the exit');
  expect(await sup.get(job.proposalId)).toMatchObject({ state: 'exited failed', rc: 3 });
  await expect(sup.cancel(job.proposalId)).rejects.toThrow(JobNotRunningError);
});

it('cancels a running job: SIGTERM to its tree, the exit as a failure with cancelRequested', async () => {
  // A grace never reached: the job ends by SIGTERM once it runs (Node's handler re-raises it),
  // which on a loaded machine took longer than 500 ms, and the SIGKILL came first.
  const sup = supervisor(fixture('forever.mjs'), { killGraceMs: 60_000 });
  const job = await sup.start(REQ);
  await waitFor(() => {
    if (ofJob(job.proposalId).some((e) => e.summary.startsWith('ready '))) return true;
    bus.flush();
    return undefined;
  }, 'the tool ready');
  expect(await sup.cancel(job.proposalId)).toMatchObject({ state: 'running', cancelRequested: true });
  await waitFor(() => (sup.runningCount === 0 ? true : undefined), 'the exit');
  expect(await sup.get(job.proposalId)).toMatchObject({ state: 'exited failed', rc: 143, signal: 'SIGTERM', cancelRequested: true });
});

it('cancels racing the exit across the thread boundary: each cancel answered or refused as not running, one exit each, final states consistent', async () => {
  // The exit comes from the job I/O thread while the cancel's signal goes out from here: cancels
  // sent 0 to 23 event-loop turns after each start sweep the window where they cross.
  const sup = supervisor(fixture('print-lines.mjs'), { maxRunning: 24 });
  const turns = (n: number) => Array.from({ length: n }).reduce<Promise<void>>((p) => p.then(() => new Promise((r) => setImmediate(r))), Promise.resolve());
  const outcomes = await Promise.all(
    Array.from({ length: 24 }, async (_v, i) => {
      const job = await sup.start(REQ);
      await turns(i);
      const answer = await sup.cancel(job.proposalId).then(
        (rec) => rec,
        (err: unknown) => err,
      );
      return { id: job.proposalId, answer };
    }),
  );
  await waitFor(() => (sup.runningCount === 0 ? true : undefined), 'every exit');
  bus.flush();
  for (const { id, answer } of outcomes) {
    if (answer instanceof Error) expect(answer).toBeInstanceOf(JobNotRunningError);
    else expect(answer).toMatchObject({ proposalId: id, cancelRequested: true });
    const exits = ofJob(id).filter((e) => e.summary.startsWith('dispatch_cli exited'));
    expect(exits, id).toHaveLength(1);
    expect(ofJob(id).at(-1)).toBe(exits[0]);
    const rec = await sup.get(id);
    // Either it exited by itself (every line printed) or the SIGTERM ended it.
    if (rec?.rc === 0) expect(rec).toMatchObject({ state: 'exited ok', signal: null });
    else expect(rec).toMatchObject({ state: 'exited failed', rc: 143, signal: 'SIGTERM', cancelRequested: true });
    if (answer instanceof Error) expect(rec?.cancelRequested).toBe(false);
  }
});

it('keeps a final state the database refuses, serves it, and stores it by the retry', async () => {
  const sup = supervisor(fixture('forever.mjs'));
  const job = await sup.start(REQ);
  await waitFor(() => {
    if (ofJob(job.proposalId).some((e) => e.summary.startsWith('ready '))) return true;
    bus.flush();
    return undefined;
  }, 'the tool ready');
  db.pragma('query_only = ON'); // every write refused from now on, as a full disk would
  try {
    await sup.cancel(job.proposalId);
    await waitFor(() => (sup.runningCount === 0 ? true : undefined), 'the exit');
    // Served from the kept final state; the database still says running.
    expect(await sup.get(job.proposalId)).toMatchObject({ state: 'exited failed', cancelRequested: true });
    expect(new JobsRepo(db).get(job.proposalId)).toMatchObject({ state: 'running' });
  } finally {
    db.pragma('query_only = OFF');
  }
  await waitFor(() => (new JobsRepo(db).get(job.proposalId)?.state === 'exited failed' ? true : undefined), 'the retry');
});

it('recovers jobs a previous run left running: marked lost once, with a failure event each', async () => {
  const jobs = new JobsRepo(db);
  const id = 'gen_0000000000aa';
  jobs.insert({ proposalId: id, projectId: 'p1', pid: 999_999_999, argv: [process.execPath, '/gone.js'], state: 'running', startedAt: new Date().toISOString() });
  const sup = supervisor(fixture('print-lines.mjs'));
  const lost = await sup.recoverLost();
  expect(lost.map((j) => [j.proposalId, j.state])).toEqual([[id, 'lost']]);
  expect(jobs.get(id)).toMatchObject({ state: 'lost' });
  bus.flush();
  expect(ofJob(id).map((e) => [e.severity, e.summary])).toEqual([['failure', 'dispatch_cli lost pid=999999999']]);
  expect(await sup.recoverLost()).toEqual([]);
});

it('kills a job whose launch the database refuses, and closes its pipes (held unread until a reader takes them)', async () => {
  // Refused once the job printed and exited: what it printed is held in its pipes, unread. By its pid, which the
  // launch is given: on a loaded machine the job may have printed and exited before the launch runs.
  const project = 'refused-launch';
  const exited = (pid: number) => {
    try {
      return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
    } catch {
      return true;
    }
  };
  class RefusingCommitter extends SqliteCommitter {
    override async launch(start: JobStart): Promise<BusEvent> {
      const pid = start.job.pid;
      expect(pid).toBeTypeOf('number');
      await waitFor(() => (exited(pid as number) ? true : undefined), `the job’s exit (pid ${pid})`);
      throw new Error('refused by the test');
    }
  }
  const descriptors = () => fs.readdirSync('/proc/self/fd').length;
  const before = descriptors();
  const sup = supervisor(fixture('print-lines.mjs'), {}, new RefusingCommitter(state, bus));
  await expect(sup.start({ ...REQ, project })).rejects.toThrow('refused by the test');
  await waitFor(() => (descriptors() <= before ? true : undefined), `the descriptors back to ${before} (now ${descriptors()})`);
});

it('holds the cap: a start past maxRunning is refused, nothing spawned', async () => {
  const sup = supervisor(fixture('forever.mjs'), { maxRunning: 1 });
  const job = await sup.start(REQ);
  await expect(sup.start(REQ)).rejects.toThrow(/running|cap|capacity/i);
  expect(sup.startedCount).toBe(1);
  await sup.stopAll(200);
  expect((await sup.get(job.proposalId))?.state).toBe('exited failed');
});
