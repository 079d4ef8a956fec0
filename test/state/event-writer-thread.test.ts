/**
 * The event writer thread (src/state/sqlite/event-writer.ts), the compiled service as its own process:
 * - the jobs' lines are written to the state database by that thread, never by the main thread: strace,
 *   attached to both, records every write to the database's write-ahead log while a job prints, and the
 *   lines' text shows only in the writer's;
 * - its client: an append written there and answered here, a wait for it (blocking, or for a console write and a
 *   transaction without blocking, no append starting meanwhile), a stream's opening without a wait, a refused append
 *   as the database's error, and the thread's death reported once (the service then stops, as for the job I/O thread: compose.ts).
 * No timing is asserted.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import readline from 'node:readline';
import path from 'node:path';
import os from 'node:os';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { SseHub } from '../../src/bus/sse.js';
import { readConfig } from '../../src/config/config.js';
import { LineRow } from '../../src/bus/bus-options.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { GENERATION_SCOPE } from '../../src/supervisor/running-job.js';
import { LineEncoder } from '../../src/supervisor/line-event.js';
import { NO_FILTER } from '../../src/bus/event.js';
import { type FrameBlock, frameOf } from '../../src/bus/frames.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import Database from '../../src/state/sqlite/binding.js';
import { BACKSTOP_CHECKPOINT_PAGES, type Db, openStateDb } from '../../src/state/sqlite/db.js';
import { SqliteStateStore } from '../../src/state/sqlite/sqlite-state-store.js';
import { SqliteCommitter } from '../../src/state/sqlite/committer.js';
import type { AppendOutcome, AppendPlan } from '../../src/state/sqlite/event-append.js';
import { packRows, type WireRows } from '../../src/state/sqlite/append-wire.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { EventWriter } from '../../src/state/sqlite/event-writer.js';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { requireStrace, traceThread } from '../helpers/strace.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { killMarked } from '../process/helpers.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => {
  requireBuild();
  requireStrace();
});
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const generate = (url: string) => fetch(`${url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'harbor-lights' }) });

interface WriterStatus {
  database: { eventWriter: { tid: number; nice: number; appends: number; rows: number; waits: number; waitedMs: number } };
}

const nice = (pid: number, tid: number) => Number(fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8').split(') ')[1]!.split(' ')[16]);

describe('the event writer thread', () => {
  it('writes the jobs’ lines to the state database: the main thread writes none of them, and waits for the thread only before its own writes', async () => {
    const store = makeTempStore();
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    // 2,000 lines in batches of 50, 2 ms apart: many appends while the job runs.
    const env = { DISPATCH_CLI: fixture('ev-lines.mjs'), EV_LINES: '2000', EV_BATCH: '50', EV_INTERVAL_MS: '2' };
    const svc = await startServiceProcess(store, env, (fn) => cleanups.push(fn));
    const pid = svc.child.pid as number;
    const before = ((await (await fetch(`${svc.url}/api/system-status`)).json()) as WriterStatus).database.eventWriter;
    // Its own kernel thread of the service, at CONSOLE_EVENT_WRITER_THREAD_NICE (5 by default), below the main thread's 0.
    expect(before.tid).not.toBe(pid);
    expect(fs.existsSync(`/proc/${pid}/task/${before.tid}`)).toBe(true);
    expect(before.nice).toBe(5);
    expect(nice(pid, before.tid)).toBe(5);
    expect(nice(pid, pid)).toBe(0);

    // One strace per thread; -yy names each descriptor (the log as …/console-state.db-wal), -s shows whole pages,
    // in which a row's text is as stored.
    const args = ['-yy', '-s', '65536', '-e', 'trace=pwrite64,write,writev'];
    const traces = [pid, before.tid].map((id) => traceThread(id, path.join(store.tmp, `thread-${id}.strace`), args, (fn) => cleanups.push(fn)));
    await waitFor(() => (traces.every((t) => t.attached()) ? true : undefined), 'strace to attach to both threads');

    const res = await generate(svc.url);
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    cleanups.push(() => killMarked(`CONSOLE_JOB_ID=${proposalId}`));
    const { exit, lines } = await waitForJobEvents(svc.url, proposalId);
    expect(exit.summary).toBe('dispatch_cli exited rc=0');
    expect(lines.filter((e) => e.detail?.startsWith(`${proposalId} stdout line `))).toHaveLength(2000);
    const after = ((await (await fetch(`${svc.url}/api/system-status`)).json()) as WriterStatus).database.eventWriter;
    expect(after.rows - before.rows).toBeGreaterThanOrEqual(2000);
    expect(after.appends).toBeGreaterThan(before.appends);

    for (const t of traces) t.strace.kill('SIGINT'); // detaches; the service runs on
    await Promise.all(traces.map((t) => t.exited));
    const [main, writer] = traces.map((t) => fs.readFileSync(t.file, 'utf8').split('\n')) as [string[], string[]];
    const walWrites = (trace: string[]) => trace.filter((l) => /^(pwrite64|write|writev)\(\d+<[^>]*console-state\.db-wal>/.test(l));
    // A line event's detail, as its JSON is stored: `<proposal id> stdout line <n>`.
    const lineText = `${proposalId} stdout line `;
    expect(walWrites(writer).some((l) => l.includes(lineText))).toBe(true);
    expect(walWrites(main).filter((l) => l.includes(lineText))).toEqual([]);
  });
});

/** Publishes `n` events; @returns the first one's id. */
function publishOnly(bus: EventBus, n: number): number {
  const first = Number(bus.publish({ severity: 'info', scope: 'test/writer', summary: 'e0' }).id);
  for (let i = 1; i < n; i++) bus.publish({ severity: 'info', scope: 'test/writer', summary: `e${i}` });
  return first;
}

describe('the event writer thread’s client', () => {
  const rowsOf = (ids: number[], data = (id: number) => JSON.stringify({ id: String(id) })): WireRows =>
    packRows(ids.map((id) => ({ id, severity: 'info', scope: 'test/writer', proposalId: null, data: data(id) })));
  const planFor = (table: string, n: number): AppendPlan => ({ reservation: null, create: [], parts: [{ table, runs: `${table}_runs`, from: 0, to: n }], drop: [], trim: null, view: null });

  function openDb(): { file: string; db: Db; log: EventLog; close: () => void } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'event-writer-'));
    const file = path.join(dir, 'console-state.db');
    const db = openStateDb(file);
    const log = new EventLog(db, 1000);
    return {
      file,
      db,
      log,
      close: () => {
        db.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }

  /** A bus on a fresh state database whose appends go to a writer thread (closed after the test). */
  async function busOnWriter(): Promise<{ file: string; db: Db; log: EventLog; writer: EventWriter; bus: EventBus }> {
    const { file, db, log, close } = openDb();
    cleanups.push(close);
    const writer = new EventWriter(WORKER_FILES.eventWriter, { file, nice: 0 }, () => {});
    cleanups.push(() => writer.close());
    await writer.ready;
    log.attachWriter(writer);
    return { file, db, log, writer, bus: new EventBus(log) };
  }

  it('lets a console write and a transaction wait for the append there without blocking this thread, and starts none until they wrote', async () => {
    const { db, log, writer, bus } = await busOnWriter();
    const store = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 1000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog: log });
    const delivered: number[] = [];
    bus.subscribe((batch) => {
      for (const r of batch) delivered.push(r.id);
    });
    const publish = (n: number) => Array.from({ length: n }, (_, i) => Number(bus.publish({ severity: 'info', scope: 'test/writer', summary: `e${i}` }).id));
    // A full batch goes to the thread at once; a second waits behind it.
    const published = publish(1024);
    expect(writer.busy).toBe(true);
    const write = store.proposals.insertPending({ id: 'prop_000000000001', kind: 'note', title: 'during an append', payload: {}, createdAt: new Date().toISOString() });
    // The transaction is queued behind the write; inside it, no append is on the thread, and none started since the
    // first: its reply would start the waiting batch at once (its hold refuses it).
    const seen = await store.transaction(async (tx) => {
      await tx.proposals.insertPending({ id: 'prop_000000000002', kind: 'note', title: 'in a transaction', payload: {}, createdAt: new Date().toISOString() });
      return { busy: writer.busy, appends: writer.stats().appends };
    });
    await write;
    expect(seen).toEqual({ busy: false, appends: 1 });
    // The write waited for the append without blocking: no Atomics wait on this thread.
    expect(writer.stats()).toMatchObject({ waits: 0, idleWaits: 1 });
    expect((await store.proposals.list('pending', 10)).map((p) => p.id).sort()).toEqual(['prop_000000000001', 'prop_000000000002']);
    // Once they wrote, the waiting batch goes to the thread: everything stored there and delivered in order.
    await bus.whenStored();
    expect(delivered).toEqual(published);
    expect(writer.stats()).toMatchObject({ appends: 2, rows: 1024, waits: 0 });
  });

  it('stores a published event before answering without blocking this thread, never inside a transaction under way', async () => {
    const { db, log, writer, bus } = await busOnWriter();
    const store = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 1000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog: log });
    const first = publishOnly(bus, 512);
    expect(writer.busy).toBe(true);
    const stored = bus.publishStored({ severity: 'info', scope: 'test/writer', summary: 'stored' });
    expect(stored).toBeInstanceOf(Promise);
    const event = await stored;
    expect(writer.stats()).toMatchObject({ waits: 0, idleWaits: 1 });
    expect(log.after(first - 1, 1000, NO_FILTER).map((r) => r.id)).toEqual(Array.from({ length: 513 }, (_, i) => first + i));
    expect(Number(event.id)).toBe(first + 512);

    // A transaction under way (it waits for something else, then rolls back): the event is stored after it ends.
    let inside!: () => void;
    const begun = new Promise<void>((resolve) => (inside = resolve));
    const tx = store.transaction(async () => {
      inside();
      await new Promise((resolve) => setTimeout(resolve, 10));
      throw new Error('rolled back');
    });
    await begun;
    const after = bus.publishStored({ severity: 'info', scope: 'test/writer', summary: 'after the transaction' });
    await expect(tx).rejects.toThrow('rolled back');
    const kept = await after;
    expect(log.after(Number(kept.id) - 1, 10, NO_FILTER).map((r) => r.id)).toEqual([Number(kept.id)]);
  });

  it('delivers a console write’s events before an event stored after its transaction, in id order', async () => {
    const { db, log, bus } = await busOnWriter();
    const store = new SqliteStateStore(db, { instanceId: 'local', eventRetention: 1000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1, eventLog: log });
    const committer = new SqliteCommitter(store, bus);
    const delivered: number[] = [];
    bus.subscribe((batch) => {
      for (const r of batch) delivered.push(r.id);
    });
    publishOnly(bus, 600);
    // A console write whose transaction waits for something else; a publish to be stored comes meanwhile and waits for
    // the transaction: it is stored after it, and must be delivered after the write's events (stored before it).
    let inside!: () => void;
    const begun = new Promise<void>((resolve) => (inside = resolve));
    const write = committer.commit(async () => {
      inside();
      await new Promise((resolve) => setTimeout(resolve, 10));
      return { result: null, events: [{ severity: 'info', scope: 'test/writer', summary: 'the write' }] };
    });
    await begun;
    const after = bus.publishStored({ severity: 'info', scope: 'test/writer', summary: 'after the write' });
    const [{ events }, later] = await Promise.all([write, after]);
    expect(Number(later.id)).toBeGreaterThan(Number(events[0]!.id));
    await bus.whenStored();
    expect(delivered).toEqual([...delivered].sort((a, b) => a - b));
    expect(delivered.at(-1)).toBe(Number(later.id));
    expect(delivered).toHaveLength(602);
  });

  it('leaves the checkpoints to the checkpointer: its connection keeps the main one’s backstop, not SQLite’s 1,000 pages', async () => {
    const { db, bus } = await busOnWriter();
    // About 8 MB of events (some 2,000 pages of 4 KB) in appends of 500, each stored before the next, and no
    // checkpointer: at SQLite's default the thread's own commits would checkpoint the log and start it over past
    // 1,000 pages (inside a commit, on the thread that stores the jobs' lines).
    const summary = 'x'.repeat(2000);
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 500; i++) bus.publish({ severity: 'info', scope: 'test/writer', summary });
      await bus.whenStored();
    }
    const [wal] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    expect(wal?.log).toBeGreaterThan(1500);
    expect(wal?.log).toBeLessThan(BACKSTOP_CHECKPOINT_PAGES);
  });

  it('stores the ids’ reservations in the appends there: this connection stores none while the lines are stored', async () => {
    const { file, log, bus } = await busOnWriter();
    const saves = vi.spyOn((log as unknown as { saveReservation: { run: (v: string) => unknown } }).saveReservation, 'run');
    // 25,000 events in batches, each stored before the next: two and a half blocks of 10,000 ids.
    let last = 0;
    for (let round = 0; round < 50; round++) {
      last = publishOnly(bus, 500) + 499;
      await bus.whenStored();
    }
    // The first block only, reserved here before any append; each next one came with an append.
    expect(saves).toHaveBeenCalledTimes(1);
    const check = new Database(file, { readonly: true });
    cleanups.push(() => check.close());
    const reserved = Number((check.prepare(`SELECT value FROM meta WHERE key = 'event_id_reserved'`).get() as { value: string }).value);
    expect(reserved).toBeGreaterThanOrEqual(last);
    // A restart (a crash alike) hands out ids above every one handed out before.
    const reopened = openStateDb(file);
    cleanups.push(() => reopened.close());
    const again = new EventLog(reopened, 1000);
    expect(again.takeId()).toBeGreaterThan(reserved);
  });

  it('opens a stream after the newest stored event without waiting for the append there nor storing the queue here', async () => {
    const { writer, bus } = await busOnWriter();
    const first = publishOnly(bus, 512 + 10);
    expect(writer.busy).toBe(true);
    // Stored so far: none of them. The stream replays up to there and receives every one of them live.
    expect(bus.flushedHead()).toBe(first - 1);
    expect(writer.stats()).toMatchObject({ waits: 0, appends: 1 });
    expect(bus.backlog).toBe(522);
    await bus.whenStored();
    expect(bus.flushedHead()).toBe(first + 521);
  });

  it('stores what is queued at shutdown there without blocking this thread: the streams’ final flush and the bus’s close wait for its append', async () => {
    const { log, writer, bus } = await busOnWriter();
    const delivered: number[] = [];
    bus.subscribe((batch) => {
      for (const r of batch) delivered.push(r.id);
    });
    const hub = new SseHub(bus, readConfig({}).sse, 1000);
    // A full batch on the thread, 88 queued behind it: the streams' final flush (shutdown.ts) waits for both.
    const first = publishOnly(bus, 600);
    expect(writer.busy).toBe(true);
    // Its bound is far past the wait: the test waits for the store, never for a timer.
    const ending = hub.closeAll(600_000);
    expect(ending).toBeInstanceOf(Promise);
    expect(await ending).toBe(true);
    expect(bus.backlog).toBe(0);
    expect(delivered).toEqual(Array.from({ length: 600 }, (_, i) => first + i));
    // Then the bus's close, with another append under way: it waits for it, and stores the rest (here: it is closing).
    publishOnly(bus, 600);
    expect(writer.busy).toBe(true);
    const closing = bus.close();
    expect(closing).toBeInstanceOf(Promise);
    await closing;
    expect(delivered).toEqual(Array.from({ length: 1200 }, (_, i) => first + i));
    expect(log.newest(1, NO_FILTER).map((r) => r.id)).toEqual([first + 1199]);
    // Neither waited blocking (an Atomics wait on this thread); the first 600 were all stored there.
    expect(writer.stats()).toMatchObject({ waits: 0 });
    expect(writer.stats().rows).toBeGreaterThanOrEqual(1112);
  });

  it('ends the streams at shutdown within its bound when the thread hangs alive; the bus’s close stores what stayed queued', async () => {
    const { file, db, log, close } = openDb();
    cleanups.push(close);
    const release = path.join(path.dirname(file), 'release');
    // Before the thread's close: its append is let go first.
    cleanups.push(() => fs.writeFileSync(release, ''));
    const writer = new EventWriter(fixture('event-writer-hanging.mjs'), { file, nice: 0 }, () => {});
    cleanups.push(() => writer.close());
    await writer.ready;
    log.attachWriter(writer);
    const bus = new EventBus(log);
    const delivered: number[] = [];
    bus.subscribe((batch) => {
      for (const r of batch) delivered.push(r.id);
    });
    const hub = new SseHub(bus, readConfig({}).sse, 1000);
    const first = Number(bus.publish({ severity: 'info', scope: 'test/writer', summary: `hang:${release}` }).id);
    publishOnly(bus, 599);
    expect(writer.busy).toBe(true);
    // The thread never answers while the file is missing: only the bound ends the wait.
    expect(await hub.closeAll(50)).toBe(false);
    expect(bus.backlog).toBe(600);
    expect(delivered).toEqual([]);
    fs.writeFileSync(release, '');
    await bus.close();
    expect(bus.backlog).toBe(0);
    expect(delivered).toEqual(Array.from({ length: 600 }, (_, i) => first + i));
    expect(db.prepare('SELECT 1').get()).toBeDefined();
    expect(log.newest(1, NO_FILTER).map((r) => r.id)).toEqual([first + 599]);
  });

  it('writes an append there and answers on this thread; drain waits for it; a refused append comes back as the database’s error', async () => {
    const { file, close } = openDb();
    cleanups.push(close);
    const deaths: Error[] = [];
    const writer = new EventWriter(WORKER_FILES.eventWriter, { file, nice: 0 }, (err) => deaths.push(err));
    cleanups.push(() => writer.close());
    await writer.ready;
    let outcome: AppendOutcome | null = null;
    let frames: FrameBlock | undefined;
    writer.submit(planFor('event_segment_1', 3), rowsOf([1, 2, 3]), (o, _e, f) => {
      outcome = o;
      frames = f;
    });
    expect(writer.busy).toBe(true);
    expect(() => writer.submit(planFor('event_segment_1', 1), rowsOf([4]), () => {})).toThrow(/already/);
    writer.drain();
    expect(writer.busy).toBe(false);
    expect(outcome).toEqual({ dropped: [], trimmed: null });
    // With the rows' frames, made there.
    expect(Array.from(frames!.ids)).toEqual([1, 2, 3]);
    expect(frames!.buf.toString('utf8')).toBe([1, 2, 3].map((id) => frameOf({ id, data: JSON.stringify({ id: String(id) }) })).join(''));
    const check = new Database(file, { readonly: true });
    cleanups.push(() => check.close());
    expect(check.prepare('SELECT id FROM event_segment_1 ORDER BY id').all()).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }]);

    // An id stored already: refused by the database, nothing written, told as its error (asynchronously here).
    const err = await new Promise<Error | null>((resolve) => writer.submit(planFor('event_segment_1', 2), rowsOf([3, 4]), (_o, e) => resolve(e)));
    expect(err?.message).toMatch(/UNIQUE constraint failed/);
    expect((err as { code?: string }).code).toMatch(/^SQLITE_CONSTRAINT/);
    expect(err).toBeInstanceOf(Database.SqliteError);
    expect(check.prepare('SELECT count(*) AS n FROM event_segment_1').get()).toEqual({ n: 3 });
    expect(writer.stats()).toMatchObject({ appends: 2, rows: 5, waits: 1, youngGenerationMb: 8 });
    await writer.close();
    expect(writer.stats().youngGenerationMb).toBeNull();
    expect(deaths).toEqual([]);
  });

  it('gives the bus one append at a time, with its frames: a flush waits for the one on the thread and stores the rest here, never the whole queue there', async () => {
    const { log, writer, bus } = await busOnWriter();
    const delivered: number[] = [];
    const framed: { ids: number[]; made: 'there' | 'here' }[] = [];
    bus.subscribe((batch, frames) => {
      for (const r of batch) delivered.push(r.id);
      // Frames made on the thread come with its batch, byte for byte the batch's.
      if (frames !== undefined) expect(frames.buf.toString('utf8')).toBe(batch.map(frameOf).join(''));
      framed.push({ ids: [batch[0]!.id, batch.at(-1)!.id], made: frames === undefined ? 'here' : 'there' });
    });
    // Four batches' worth in one turn: the first full batch goes to the thread at once, the others queue behind it.
    const published = Array.from({ length: 4 * 512 }, (_, i) => Number(bus.publish({ severity: 'info', scope: 'test/writer', summary: `e${i}` }).id));
    expect(writer.busy).toBe(true);
    bus.flush();
    // The thread stored its one append; its reply did not start another inside the wait.
    expect(writer.stats()).toMatchObject({ appends: 1, rows: 512 });
    expect(writer.busy).toBe(false);
    expect(bus.backlog).toBe(0);
    expect(delivered).toEqual(published);
    // The thread's append came with its frames; the rest, stored here, is framed by the streams here.
    expect(framed).toEqual([
      { ids: [published[0], published[511]], made: 'there' },
      { ids: [published[512], published.at(-1)], made: 'here' },
    ]);
    // Stored in order (retention keeps the newest 1,000 or a few more).
    const kept = log.after(0, 5000, NO_FILTER).map((r) => r.id);
    expect(kept.length).toBeGreaterThanOrEqual(1000);
    expect(kept).toEqual(published.slice(-kept.length));
  });

  it('starts no append while a batch’s frames are read: a full batch published by a subscriber waits, so the thread does not write those frames again', async () => {
    const { file, writer, bus } = await busOnWriter();
    const check = new Database(file, { readonly: true });
    cleanups.push(() => check.close());
    const delivered: number[] = [];
    const inside: { started: number; reading: boolean }[] = [];
    const intact: boolean[] = [];
    let extra: number[] = [];
    bus.subscribe((batch) => {
      for (const r of batch) delivered.push(r.id);
      if (inside.length > 0) return;
      const before = writer.stats().appends;
      // A full batch published while the frames are read (as the end of a storage outage publishes its report with
      // thousands of events held): it must not go to the thread now.
      extra = Array.from({ length: 600 }, (_, i) => Number(bus.publish({ severity: 'info', scope: 'test/writer', summary: `inside ${i}` }).id));
      inside.push({ started: writer.stats().appends - before, reading: writer.reading });
      if (!writer.busy) return;
      // Had it gone, the thread stores it and writes its frames where this batch's are: wait for that, so the next
      // subscriber would read them changed.
      const last = extra[511] as number;
      while ((check.prepare('SELECT max(id) AS id FROM events').get() as { id: number }).id < last) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200);
    });
    bus.subscribe((batch, frames) => {
      if (frames !== undefined) intact.push(frames.buf.toString('utf8') === batch.map(frameOf).join(''));
    });
    // A full batch: it goes to the thread at once, and comes back with its frames in the shared buffer.
    const first = publishOnly(bus, 512);
    expect(writer.busy).toBe(true);
    await waitFor(() => (delivered.length === 512 + 600 ? true : undefined), 'every event delivered');
    expect(inside).toEqual([{ started: 0, reading: true }]);
    expect(intact[0]).toBe(true);
    expect(intact.every(Boolean)).toBe(true);
    expect(delivered).toEqual([...Array.from({ length: 512 }, (_, i) => first + i), ...extra]);
    expect(writer.reading).toBe(false);
  });

  it('takes a job’s lines as their tail and time: their JSON is joined on the thread, never here, and stored and framed whole', async () => {
    const { log, writer, bus } = await busOnWriter();
    const encoder = new LineEncoder('gen_split', 4096);
    const rows: EventRow[] = [];
    const joinedWhenDelivered: boolean[] = [];
    bus.subscribe((batch, frames) => {
      for (const r of batch) {
        rows.push(r);
        joinedWhenDelivered.push((r as LineRow).isJoined);
      }
      // The thread's frames carry the whole JSON, made there.
      if (frames !== undefined) expect(frames.buf.toString('utf8')).toBe(batch.map(frameOf).join(''));
    });
    // One full batch goes to the thread at once; the 10 after it are stored here by the flush, joined here.
    const texts = Array.from({ length: 522 }, (_, i) => (i % 7 === 0 ? `é "quoted" ${i}\\` : `line ${i}`));
    for (const [i, text] of texts.entries()) bus.publishEncoded('info', GENERATION_SCOPE, encoder.tail(0, i + 1, text, false), 'gen_split', undefined);
    expect(writer.busy).toBe(true);
    bus.flush();
    expect(rows.every((r) => r instanceof LineRow)).toBe(true);
    // The thread's 512 were never joined on this thread (until read now); those stored here were.
    expect(joinedWhenDelivered.slice(0, 512).every((j) => !j)).toBe(true);
    expect(joinedWhenDelivered.slice(512).every((j) => j)).toBe(true);
    // What was stored, on either side, is each event's whole JSON: the same event as its line.
    const stored = log.after(0, 1000, NO_FILTER) as EventRow[];
    expect(stored.map((r) => r.id)).toEqual(rows.map((r) => r.id));
    stored.forEach((r, i) => {
      expect(r.data).toBe(rows[i]!.data);
      expect(JSON.parse(r.data)).toMatchObject({ id: String(r.id), severity: 'info', scope: GENERATION_SCOPE, summary: texts[i], detail: `gen_split stdout line ${i + 1}` });
    });
  });

  /**
   * A writer thread (event-writer-hanging.mjs) on a fresh database, with an answer limit of 100 ms (not the minute the
   * service gives it), and an append on it that never goes (the file that would let it go is never written).
   * @returns the writer, the deaths it reported, and whether the append's owner was told.
   */
  async function hungWriter(): Promise<{ writer: EventWriter; deaths: Error[]; told: () => boolean }> {
    const { file, close } = openDb();
    cleanups.push(close);
    const deaths: Error[] = [];
    const writer = new EventWriter(fixture('event-writer-hanging.mjs'), { file, nice: 0 }, (err) => deaths.push(err), 100);
    cleanups.push(() => writer.close());
    await writer.ready;
    let told = false;
    const never = path.join(path.dirname(file), 'never');
    writer.submit(
      planFor('event_segment_1', 1),
      rowsOf([1], () => `{"summary":"hang:${never}"}`),
      () => (told = true),
    );
    return { writer, deaths, told: () => told };
  }

  it('takes a thread that does not answer an append within its limit for dead: terminated, its death reported once, every wait for it ended', async () => {
    // Nobody waits for its append at first: the watchdog finds it all the same.
    const { writer, deaths, told } = await hungWriter();
    await waitFor(() => (deaths.length > 0 ? true : undefined), 'the hang reported');
    await writer.ended;
    expect(deaths.map((e) => e.message)).toEqual(['the event writer thread did not answer within 100 ms']);
    // Later waits end at once, with the same error; the append's owner is never told it was stored.
    await expect(writer.idle()).rejects.toThrow(/did not answer within 100 ms/);
    expect(() => writer.drain()).toThrow(/did not answer within 100 ms/);
    // No append goes to the terminated thread: it is refused with the hang's error, and still busy for the log.
    expect(writer.busy).toBe(true);
    expect(() => writer.submit(planFor('event_segment_1', 1), rowsOf([2]), () => {})).toThrow(/^the event writer thread did not answer within 100 ms$/);
    expect(told()).toBe(false);
  });

  it('does not take a pause of the whole process (SIGSTOP past the limit) for a hang of the thread', async () => {
    const { file, close } = openDb();
    cleanups.push(close);
    const release = path.join(path.dirname(file), 'release');
    const child = spawn(process.execPath, [fixture('event-writer-paused.mjs'), file, release], { stdio: ['ignore', 'pipe', 'inherit'] });
    cleanups.push(() => child.kill('SIGKILL'));
    const out = readline.createInterface({ input: child.stdout! });
    const lines = out[Symbol.asyncIterator]();
    expect((await lines.next()).value).toBe('submitted');
    // Stopped with the append on the thread; it may go once the process runs again. The pause (the fault put in, 11 s)
    // outlasts the child's answer limit (10 s): counted by the clock, that append would be taken for a hang.
    child.kill('SIGSTOP');
    fs.writeFileSync(release, '');
    await new Promise((resolve) => setTimeout(resolve, 11_000));
    child.kill('SIGCONT');
    expect(JSON.parse((await lines.next()).value as string)).toEqual({ answered: true, deaths: [] });
    expect(await once(child, 'exit')).toEqual([0, null]);
  });

  it('ends a console write’s wait for an append the thread does not answer, and a blocking wait, at the limit', async () => {
    const { writer, deaths } = await hungWriter();
    await expect(writer.idle()).rejects.toThrow(/^the event writer thread did not answer within 100 ms$/);
    expect(deaths).toHaveLength(1);
    await writer.ended;

    // A blocking wait (the thread's own limit, checked between its waits) ends too, and reports the death once.
    const { writer: second, deaths: blocked } = await hungWriter();
    expect(() => second.drain()).toThrow(/^the event writer thread did not answer within 100 ms$/);
    expect(blocked.map((e) => e.message)).toEqual(['the event writer thread did not answer within 100 ms']);
    await second.ended;
    expect(blocked).toHaveLength(1);
  });

  it('reports its death once, and a wait for its append ends instead of hanging', async () => {
    const { file, close } = openDb();
    cleanups.push(close);
    const deaths: Error[] = [];
    const writer = new EventWriter(fixture('event-writer-crashing.mjs'), { file, nice: 0 }, (err) => deaths.push(err));
    cleanups.push(() => writer.close());
    await writer.ready;
    let told = false;
    writer.submit(
      planFor('event_segment_1', 1),
      rowsOf([1], () => 'crash'),
      () => (told = true),
    );
    // A console write's wait (without blocking) ends too, as does the blocking one.
    const idle = writer.idle();
    expect(() => writer.drain()).toThrow(/ended before its append/);
    await expect(idle).rejects.toThrow(/ended before its append/);
    await writer.ended;
    await waitFor(() => (deaths.length > 0 ? true : undefined), 'the death reported');
    expect(deaths).toHaveLength(1);
    expect(deaths[0]!.message).toMatch(/^the event writer thread ended on an uncaught error/);
    expect(told).toBe(false);
  });
});
