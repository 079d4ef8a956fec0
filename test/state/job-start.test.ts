/**
 * A generation job's start on the embedded SQLite store (SqliteCommitter.launch, event.ts JobStart): the job, its
 * owner and its pending GenerationProposal ride on the spawn event through the bus, stored in the append that
 * stores the event (on the event writer thread when there is one), after every event queued before it.
 * - Under a queue of lines with an append on the thread, a launch neither waits for the thread nor stores on
 *   the main connection: the thread stores it (its rows count the spawn event), and the main thread never waited.
 * - A start the database refuses is refused to the launch with the database's error and withdrawn (no job, no
 *   proposal, no event), on the thread and on the main connection; the events queued with it are kept and stored.
 * - A full database refuses it with the state layer's fault (`state_db_full`), as it refused the transaction before.
 * Real SQLite files in a temp dir, the compiled writer thread. No timing is asserted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { EventBus, STORAGE_OUTAGE_SCOPE } from '../../src/bus/bus.js';
import { NO_FILTER, type BusEvent, type JobStart } from '../../src/bus/event.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import Database from '../../src/state/sqlite/binding.js';
import { SqliteCommitter } from '../../src/state/sqlite/committer.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { EventWriter } from '../../src/state/sqlite/event-writer.js';
import { SqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import { StateDbFaultError } from '../../src/state/sqlite/errors.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { waitFor } from '../helpers/events.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => requireBuild());
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

interface Setup {
  readonly db: Db;
  readonly log: EventLog;
  readonly bus: EventBus;
  readonly committer: SqliteCommitter;
  readonly writer: EventWriter | null;
  readonly delivered: BusEvent[];
}

/** A state database with its bus and committer, the appends on a writer thread when `onThread`. */
async function open(onThread: boolean): Promise<Setup> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'job-start-'));
  const file = path.join(dir, 'console-state.db');
  const db = openStateDb(file);
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => db.close());
  const log = new EventLog(db, 100_000);
  let writer: EventWriter | null = null;
  if (onThread) {
    writer = new EventWriter(WORKER_FILES.eventWriter, { file, nice: 0 }, () => {});
    const w = writer;
    cleanups.push(() => w.close());
    await writer.ready;
    log.attachWriter(writer);
  }
  const bus = new EventBus(log, { retryMs: 10 });
  cleanups.push(() => bus.close());
  const state = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 100_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog: log });
  const delivered: BusEvent[] = [];
  bus.subscribe((batch) => delivered.push(...batch.map((r) => JSON.parse(r.data) as BusEvent)));
  return { db, log, bus, committer: new SqliteCommitter(state, bus), writer, delivered };
}

function startOf(proposalId: string, projectId = 'p1'): JobStart {
  const at = new Date().toISOString();
  return {
    job: { proposalId, projectId, pid: 4242, argv: ['node', 'dispatch_cli.js', '--project', projectId], startedAt: at, instanceId: 'local' },
    proposal: { id: proposalId, kind: 'GenerationProposal', title: `Generate ${projectId}`, payload: { project: projectId }, createdAt: at },
  };
}

const spawnedOf = (proposalId: string) => ({ severity: 'info' as const, scope: 'engine/generation', summary: 'dispatch_cli spawned pid=4242', payload: { proposal_id: proposalId } });

/** Queues `n` plain events; @returns their ids. */
const queueLines = (bus: EventBus, n: number, tag: string) => Array.from({ length: n }, (_, i) => Number(bus.publish({ severity: 'info', scope: 'test/lines', summary: `${tag} ${i}` }).id));

it('stores a launch on the writer thread, after the lines queued before it, without the main thread waiting for the thread', async () => {
  const { db, log, bus, committer, writer, delivered } = await open(true);
  // A full batch goes to the thread at once; 100 more queue behind it, then the launch.
  const lines = queueLines(bus, 612, 'line');
  expect(writer!.busy).toBe(true);
  const event = await committer.launch(startOf('gen_ontheside'), spawnedOf('gen_ontheside'));
  expect(Number(event.id)).toBeGreaterThan(lines.at(-1)!);
  // The main thread never waited for the thread, and the thread stored every event, the spawn event included.
  expect(writer!.stats()).toMatchObject({ waits: 0, rows: 613 });
  expect(db.prepare(`SELECT state, instance_id, pid, argv FROM jobs WHERE proposal_id = 'gen_ontheside'`).get()).toEqual({
    state: 'running',
    instance_id: 'local',
    pid: 4242,
    argv: JSON.stringify(startOf('x').job.argv),
  });
  expect(db.prepare(`SELECT status, kind, payload FROM proposals WHERE id = 'gen_ontheside'`).get()).toEqual({ status: 'pending', kind: 'GenerationProposal', payload: '{"project":"p1"}' });
  // Delivered before the launch resolved, in id order after every line; stored as delivered.
  expect(delivered.map((e) => Number(e.id))).toEqual([...lines, Number(event.id)]);
  expect(delivered.at(-1)).toEqual(event);
  expect(log.after(0, 1000, NO_FILTER).map((r) => r.id)).toEqual([...lines, Number(event.id)]);
});

for (const onThread of [true, false]) {
  it(`refuses a launch whose start the database refuses, withdrawn whole; the events queued with it are stored (${onThread ? 'on the writer thread' : 'on the main connection'})`, async () => {
    const { db, log, bus, committer, delivered } = await open(onThread);
    db.exec(`CREATE TRIGGER refuse_start BEFORE INSERT ON jobs WHEN NEW.project_id = 'refused' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    const before = queueLines(bus, 600, 'before');
    const refused = committer.launch(startOf('gen_refused', 'refused'), spawnedOf('gen_refused'));
    const after = queueLines(bus, 10, 'after');
    // The database's own error, on either connection (its faults map to the state layer's errors as a transaction's).
    const err = await refused.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(Database.SqliteError);
    expect(err).toMatchObject({ message: 'refused by the test', code: 'SQLITE_CONSTRAINT_TRIGGER' });
    // Nothing of it stored: no job, no proposal, no event.
    expect(db.prepare(`SELECT count(*) AS n FROM jobs`).get()).toEqual({ n: 0 });
    expect(db.prepare(`SELECT count(*) AS n FROM proposals`).get()).toEqual({ n: 0 });
    // The others are stored (the retry's) and delivered once each, in id order; a later launch is stored.
    const ok = await committer.launch(startOf('gen_next'), spawnedOf('gen_next'));
    await waitFor(() => (delivered.some((e) => e.id === ok.id) ? true : undefined), 'the next launch delivered');
    const ids = [...before, ...after, Number(ok.id)];
    expect(delivered.filter((e) => e.scope !== STORAGE_OUTAGE_SCOPE).map((e) => Number(e.id))).toEqual(ids);
    expect(delivered.some((e) => e.payload.proposal_id === 'gen_refused')).toBe(false);
    const stored = log.after(0, 5000, NO_FILTER).filter((r) => r.scope !== STORAGE_OUTAGE_SCOPE);
    expect(stored.map((r) => r.id)).toEqual(ids);
    expect(db.prepare(`SELECT proposal_id, state FROM jobs`).all()).toEqual([{ proposal_id: 'gen_next', state: 'running' }]);
  });
}

it('refuses a launch on a full state database with the state layer’s fault (a 507 over HTTP), as a refused transaction is', async () => {
  const { db, committer, delivered } = await open(false);
  // No page beyond those the file has: the next insert needs one and SQLite answers SQLITE_FULL.
  const pages = db.pragma('page_count', { simple: true }) as number;
  db.pragma(`max_page_count = ${pages}`);
  const start = startOf('gen_full');
  const big = { ...start, proposal: { ...start.proposal, payload: { project: 'p1', filler: 'x'.repeat(64 * 1024) } } };
  const err = await committer.launch(big, spawnedOf('gen_full')).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(StateDbFaultError);
  expect(err).toMatchObject({ code: 'state_db_full', sqliteCode: 'SQLITE_FULL' });
  db.pragma('max_page_count = 1073741823');
  expect(db.prepare(`SELECT count(*) AS n FROM jobs`).get()).toEqual({ n: 0 });
  expect(delivered.some((e) => e.payload.proposal_id === 'gen_full')).toBe(false);
});
