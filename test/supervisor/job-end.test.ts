/**
 * A job's state commits with its events (shared/design/cluster.md, "Under faults"): its final
 * state with its exit event, after its lines; `lost` with its lost event. Here on the embedded
 * SQLite database, with the event log refusing appends for a while (as a full disk refuses the
 * bus's batch) while the rest of the database works: a service killed meanwhile must find the
 * job `running` (to be marked lost properly), never ended without its events.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER, type BusEvent } from '../../src/bus/event.js';
import type { EventRow, LocalEventLog } from '../../src/bus/local-event-log.js';
import { SqliteCommitter } from '../../src/state/sqlite/committer.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import { HousekeepingThread } from '../../src/process/index.js';
import { JobIo } from '../../src/supervisor/index.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { JobsRepo } from '../../src/state/sqlite/jobs-repo.js';
import { SqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import { Supervisor, type GenerationRequest } from '../../src/supervisor/index.js';
import { waitFor } from '../helpers/events.js';
import { fixture } from '../helpers/service.js';

let tmp: string;
let db: Db;
let log: EventLog;
let bus: EventBus;
let state: SqliteStateStore;
let procs: HousekeepingThread;
let io: JobIo;
/** While set, the event log refuses every append, as a full disk would. */
let refusing = false;

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'job-end-'));
  db = openStateDb(path.join(tmp, 'state.db'));
  log = new EventLog(db, 100_000);
  const refusable: LocalEventLog = {
    takeId: () => log.takeId(),
    append: (rows: readonly EventRow[]) => {
      if (refusing) throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      return log.append(rows);
    },
    resync: () => log.resync(),
    get lastIssuedId() {
      return log.lastIssuedId;
    },
    get size() {
      return log.size;
    },
    after: (sinceId, limit, filter, upTo) => log.after(sinceId, limit, filter, upTo),
    framesAfter: (sinceId, limit, filter, upTo) => log.framesAfter(sinceId, limit, filter, upTo),
    newest: (limit, filter) => log.newest(limit, filter),
  };
  bus = new EventBus(refusable, { retryMs: 20 });
  state = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 100_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog: log });
  procs = new HousekeepingThread(WORKER_FILES.proc);
  io = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: true }, (err) => {
    throw err;
  });
});

afterAll(async () => {
  refusing = false;
  bus.close();
  await procs.close();
  await io.close();
  db.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const REQ: GenerationRequest = { project: 'p1', shotId: null, model: null, dryRun: false, episode: null, modality: 'video_i2v' };

function supervisor(tool: string): Supervisor {
  return new Supervisor(bus, new SqliteCommitter(state, bus), procs, io, {
    instanceId: 'local',
    dispatchCli: tool,
    childEnv: { PATH: process.env.PATH ?? '' },
    maxRunning: 4,
    retryAfterSeconds: 1,
    killGraceMs: 500,
    lineMaxBytes: 1024,
    historySize: 1000,
    sweep: { maxPasses: 10, maxMs: 2000 },
  });
}

const stored = (id: string): BusEvent[] =>
  log
    .after(0, 100_000, NO_FILTER)
    .map((r) => JSON.parse(r.data) as BusEvent)
    .filter((e) => e.payload.proposal_id === id || (e.detail ?? '').startsWith(`${id} `));

it('keeps a job running in the database until its exit event is stored with its final state, after its lines', async () => {
  const sup = supervisor(fixture('print-lines.mjs'));
  const exits: string[] = [];
  sup.onExit((j) => exits.push(j.proposalId));
  refusing = false;
  const job = await sup.start(REQ);
  refusing = true;
  try {
    await waitFor(() => (exits.includes(job.proposalId) ? true : undefined), 'the exit');
    // The process ended; its events cannot be stored: neither is its final state.
    expect(new JobsRepo(db).get(job.proposalId)?.state).toBe('running');
    expect(stored(job.proposalId).some((e) => e.summary.startsWith('dispatch_cli exited'))).toBe(false);
    // Served meanwhile from memory, as it ended.
    expect(await sup.get(job.proposalId)).toMatchObject({ state: 'exited ok', rc: 0 });
  } finally {
    refusing = false;
  }
  await waitFor(() => (new JobsRepo(db).get(job.proposalId)?.state === 'exited ok' ? true : undefined), 'the retry');
  const events = stored(job.proposalId).map((e) => e.summary);
  expect(events[0]).toMatch(/^dispatch_cli spawned pid=\d+$/);
  expect(events.filter((s) => s.startsWith('out '))).toEqual(['out 1', 'out 2', 'out 3']);
  expect(events.at(-1)).toBe('dispatch_cli exited rc=0');
});

it('marks a job of a previous run lost only with its lost event; a second recovery marks nothing', async () => {
  const jobs = new JobsRepo(db);
  const id = 'gen_0000000000bb';
  jobs.insert({ proposalId: id, projectId: 'p1', pid: 999_999_998, argv: [process.execPath, '/gone.js'], state: 'running', startedAt: new Date().toISOString() });
  const sup = supervisor(fixture('print-lines.mjs'));
  refusing = true;
  const recovering = sup.recoverLost();
  let recovered = false;
  void recovering.then(() => (recovered = true));
  try {
    // Wait until the bus tried (and failed) to store the lost event.
    await waitFor(() => (bus.storageOutage !== null ? true : undefined), 'the refused store');
    expect(jobs.get(id)?.state).toBe('running');
    expect(recovered).toBe(false);
  } finally {
    refusing = false;
  }
  expect((await recovering).map((j) => [j.proposalId, j.state])).toEqual([[id, 'lost']]);
  expect(jobs.get(id)?.state).toBe('lost');
  expect(stored(id).map((e) => e.summary)).toEqual(['dispatch_cli lost pid=999999998']);
  expect(await sup.recoverLost()).toEqual([]);
  expect(stored(id)).toHaveLength(1);
});
