/**
 * The cluster bus on its own (src/bus/cluster-bus.ts), two of them on one real PostgreSQL
 * database as two instances would be, woken by a real LISTEN connection: every event of both
 * reaches the subscribers of both, in id order, each once (an append's own rows delivered
 * directly, the other's read from the log); a publish that must be stored is refused while the
 * database is away, and held events are stored in order once it is back;
 * - on an ordered log (the event append thread's) the next append is sent while one runs, never more than one ahead,
 *   and one sent before a failure is held with the failed one's events and stored after them;
 * - the event append thread itself runs appends sent at once in their order, and none sent before a failed one was
 *   heard of (refused unrun: nothing of it stored); it makes the stored events' frames, byte for byte as the log
 *   serves them, and the bus hands them to its subscribers.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ClusterBus } from '../../src/bus/cluster-bus.js';
import type { BusEvent } from '../../src/bus/event.js';
import { NO_FILTER } from '../../src/bus/event.js';
import { eventTail } from '../../src/bus/event-json.js';
import { type FrameBlock, frameOf } from '../../src/bus/frames.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
import { AppendNotRunError, eventDraft, type SharedEventDraft, type SharedEventLog } from '../../src/bus/shared-event-log.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import { PgAppendThread } from '../../src/state/pg/append-thread.js';
import { sessionBoundsFor } from '../../src/state/pg/pg-state-store.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { EVENTS_CHANNEL } from '../../src/state/pg/event-repo.js';
import { PgListener } from '../../src/state/pg/listener.js';
import { openPgStateStore, type PgStateStore } from '../../src/state/pg/pg-state-store.js';
import { waitFor } from '../helpers/events.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';

let server: TestPostgres;
const closers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  server = await startPostgres();
});

afterAll(async () => {
  for (const c of closers.reverse()) await c();
  await server?.stop();
});

/** An instance's bus on `url`, woken by its own listener; `got` collects the ids delivered. */
async function instance(url: string) {
  const store: PgStateStore = await openPgStateStore({ url, connectTimeoutMs: 5000, eventRetention: 1_000_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1 });
  const bus = await ClusterBus.open(store.events, { maxUnstored: 10_000, retryMs: 50, pollMs: 1000 });
  const listener = new PgListener({ url, channels: { [EVENTS_CHANNEL]: () => bus.wake() }, onConnected: () => bus.wake() });
  await listener.start();
  const got: number[] = [];
  bus.subscribe((batch: readonly EventRow[]) => got.push(...batch.map((r) => r.id)));
  closers.push(async () => {
    await bus.close();
    await listener.close();
    await store.close();
  });
  return { bus, got };
}

it('two instances: every event of both to the subscribers of both, in id order, each once', async () => {
  const url = await server.freshDatabase();
  const [a, b] = await Promise.all([instance(url), instance(url)]);
  const N = 2000;
  for (let i = 0; i < N; i++) {
    a.bus.publish({ severity: 'info', scope: 'test/a', summary: `a${i}` });
    b.bus.publish({ severity: 'info', scope: 'test/b', summary: `b${i}` });
    if (i % 100 === 0) await new Promise((r) => setImmediate(r));
  }
  for (const x of [a, b]) await waitFor(() => (x.got.length >= 2 * N ? true : undefined), 'every event delivered');
  const all = Array.from({ length: 2 * N }, (_, i) => i + 1);
  expect(a.got).toEqual(all);
  expect(b.got).toEqual(all);
  // The log holds each instance's events in its publish order.
  const rows = await a.bus.readAfter(0, 2 * N, { severities: null, scopePrefix: 'test/a' });
  expect(rows.map((r) => JSON.parse(r.data).summary)).toEqual(Array.from({ length: N }, (_, i) => `a${i}`));
});

it('the database away: a stored publish is refused, the others are held and stored in order once it is back', async () => {
  const url = await server.freshDatabase();
  const a = await instance(url);
  const first = await a.bus.publishStored({ severity: 'info', scope: 'test', summary: 'before' });
  expect(first.id).toBe('1');
  await server.pause();
  try {
    await expect(a.bus.publishStored({ severity: 'info', scope: 'test', summary: 'refused' })).rejects.toThrow();
    for (let i = 0; i < 50; i++) a.bus.publish({ severity: 'info', scope: 'test', summary: `held ${i}` });
    await waitFor(() => (a.bus.storageOutage !== null ? true : undefined), 'the outage');
    expect(a.bus.backlog).toBe(50);
  } finally {
    await server.resume();
  }
  await waitFor(() => (a.bus.storageOutage === null && a.bus.backlog === 0 ? true : undefined), 'the held events stored');
  const rows = await a.bus.readAfter(0, 100, { severities: null, scopePrefix: null });
  const summaries = rows.map((r) => JSON.parse(r.data).summary as string);
  expect(summaries.slice(0, 51)).toEqual(['before', ...Array.from({ length: 50 }, (_, i) => `held ${i}`)]);
  // Then the report of the outage (storage-outage.ts).
  expect(summaries[51]).toBe('events stored late: the state database could not store them for a while');
  await waitFor(() => (a.got.length === 52 ? true : undefined), 'delivered');
  expect(a.got).toEqual(Array.from({ length: 52 }, (_, i) => i + 1));
});

it('the database away while nothing but a stored publish was queued: once it is back the outage ends, and later publishes are stored', async () => {
  const url = await server.freshDatabase();
  const a = await instance(url);
  await a.bus.publishStored({ severity: 'info', scope: 'test', summary: 'before' });
  await server.pause();
  try {
    // The only event that failed is withdrawn with its refusal: nothing is held.
    await expect(a.bus.publishStored({ severity: 'info', scope: 'test', summary: 'refused' })).rejects.toThrow();
    expect(a.bus.storageOutage).not.toBeNull();
    expect(a.bus.backlog).toBe(0);
  } finally {
    await server.resume();
  }
  // The retry stores the outage's report: that is its attempt, and its success ends the outage.
  await waitFor(() => (a.bus.storageOutage === null ? true : undefined), 'the end of the outage');
  a.bus.publish({ severity: 'info', scope: 'test', summary: 'after' });
  await waitFor(() => (a.got.length === 3 ? true : undefined), 'the report and the later publish delivered');
  const rows = await a.bus.readAfter(0, 100, { severities: null, scopePrefix: null });
  expect(rows.map((r) => JSON.parse(r.data).summary as string)).toEqual(['before', 'events stored late: the state database could not store them for a while', 'after']);
});

/** An ordered log whose appends are answered by the test: each call kept with its drafts' summaries. */
class AnsweredLog implements SharedEventLog {
  readonly ordered = true;
  readonly calls: { summaries: string[]; retryAfter: number | null; store: () => void; refuse: (err: Error) => void }[] = [];
  private nextId = 1;
  append(drafts: readonly SharedEventDraft[], retryAfter: number | null = null): Promise<(BusEvent | null)[]> {
    return new Promise((resolve, reject) => {
      this.calls.push({
        summaries: drafts.map((d) => d.summary),
        retryAfter,
        store: () => resolve(drafts.map((d) => ({ id: String(this.nextId++), ts: d.ts, severity: d.severity, scope: d.scope, summary: d.summary, detail: d.detail, payload: d.payload }))),
        refuse: reject,
      });
    });
  }
  newSource = async () => 1;
  after = async () => [];
  newest = async () => [];
  lastId = async () => 0;
  count = async () => 0;
}

it('on an ordered log, sends the next append while one runs (one ahead at most); one sent before a failure is held with it and stored after it', async () => {
  const log = new AnsweredLog();
  const bus = await ClusterBus.open(log, { maxUnstored: 100, retryMs: 20, pollMs: 60_000 });
  const got: string[] = [];
  bus.subscribe((batch) => got.push(...batch.map((r) => `${r.id}:${JSON.parse(r.data).summary}`)));
  const calls = (n: number) => waitFor(() => (log.calls.length >= n ? true : undefined), `append ${n}`);
  const turns = async (n: number) => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };
  bus.publish({ severity: 'info', scope: 'test', summary: 'a1' });
  await calls(1);
  bus.publish({ severity: 'info', scope: 'test', summary: 'a2' });
  bus.publish({ severity: 'info', scope: 'test', summary: 'a3' });
  // Sent while the first runs.
  await calls(2);
  expect(log.calls.map((c) => c.summaries)).toEqual([['a1'], ['a2', 'a3']]);
  bus.publish({ severity: 'info', scope: 'test', summary: 'a4' });
  await turns(5);
  expect(log.calls).toHaveLength(2);
  // The first fails; the one behind it was not run (as the append thread answers it).
  log.calls[0]!.refuse(new Error('refused'));
  log.calls[1]!.refuse(new AppendNotRunError());
  await waitFor(() => (bus.storageOutage !== null ? true : undefined), 'the outage');
  expect(bus.backlog).toBe(4);
  expect(got).toEqual([]);
  // The retry: everything held, in publish order, looked up after the head it had.
  await calls(3);
  expect(log.calls[2]).toMatchObject({ summaries: ['a1', 'a2', 'a3', 'a4'], retryAfter: 0 });
  log.calls[2]!.store();
  // The outage's report follows.
  await calls(4);
  log.calls[3]!.store();
  await waitFor(() => (got.length === 5 ? true : undefined), 'the held events and the report delivered');
  expect(got).toEqual(['1:a1', '2:a2', '3:a3', '4:a4', '5:events stored late: the state database could not store them for a while']);
  expect(bus.storageOutage).toBeNull();

  // The first stored, the one behind it refused: the first's delivered, the second's held and stored after.
  bus.publish({ severity: 'info', scope: 'test', summary: 'b1' });
  await calls(5);
  bus.publish({ severity: 'info', scope: 'test', summary: 'b2' });
  await calls(6);
  log.calls[4]!.store();
  await waitFor(() => (got.length === 6 ? true : undefined), 'b1 delivered');
  log.calls[5]!.refuse(new Error('refused'));
  await waitFor(() => (bus.storageOutage !== null ? true : undefined), 'the second outage');
  await calls(7);
  // Looked up after the head it was sent at (b1 not delivered yet then).
  expect(log.calls[6]).toMatchObject({ summaries: ['b2'], retryAfter: 5 });
  log.calls[6]!.store();
  await calls(8);
  log.calls[7]!.store();
  await waitFor(() => (got.length === 8 ? true : undefined), 'b2 and the report delivered');
  expect(got.slice(5)).toEqual(['6:b1', '7:b2', '8:events stored late: the state database could not store them for a while']);
  await bus.close();
});

it('the event append thread: appends sent at once run in their order; those sent before a failed one was heard of are refused unrun', async () => {
  requireBuild();
  const url = await server.freshDatabase();
  const store = await openPgStateStore({ url, connectTimeoutMs: 5000, eventRetention: 1_000_000, clicksPerProject: 10, clicksMaxTotal: 100, workspaceReportsKept: 1 });
  const deaths: Error[] = [];
  const thread = new PgAppendThread(WORKER_FILES.pgAppend, { url, connectTimeoutMs: 5000, sessionBounds: sessionBoundsFor(10_000), retention: 1_000_000, nice: 0 }, store.events, (err) =>
    deaths.push(err),
  );
  closers.push(async () => {
    await thread.close();
    await store.close();
  });
  await thread.ready;
  let token = 0;
  const draft = (summary: string, scope = 'test/thread') => eventDraft({ severity: 'info', scope, summary }, ++token);
  const ids = (events: (BusEvent | null)[]) => events.map((e) => Number(e?.id));
  // Sent at once: run one after the other, ids in the order sent.
  const [a, b] = await Promise.all([thread.append([draft('a1'), draft('a2')]), thread.append([draft('b1')])]);
  expect([...ids(a), ...ids(b)]).toEqual([1, 2, 3]);
  // The first refused by the database (a scope with a NUL character: not text to PostgreSQL); the two sent behind it are not run.
  const bad = thread.append([draft('bad', 'test/\u0000')]);
  const next = thread.append([draft('behind 1')]);
  const last = thread.append([draft('behind 2')]);
  await expect(bad).rejects.toThrow(/0x00/);
  await expect(next).rejects.toBeInstanceOf(AppendNotRunError);
  await expect(last).rejects.toBeInstanceOf(AppendNotRunError);
  // Sent once the failure was heard of: run.
  const later = await thread.append([draft('later')]);
  expect(ids(later)[0]).toBeGreaterThan(3);
  const rows = await store.events.after(0, 100, NO_FILTER);
  expect(rows.map((r) => JSON.parse(r.data).summary as string)).toEqual(['a1', 'a2', 'b1', 'later']);
  expect(thread.stats()).toMatchObject({ appends: 6, rows: 7 });

  // The stored events' frames, made there: as the log serves them, a job's line (its JSON made elsewhere) included.
  const head = Number(rows.at(-1)!.id);
  const line: SharedEventDraft = { ...draft(''), proposalId: 'gen_framed', tail: eventTail('info', 'engine/generation', 'line 1 é ✓', 'gen_framed stdout line 1', '{"source":"dispatch_cli"}') };
  const framed = await thread.appendFramed([draft('f1'), line, draft('f3 "quoted" \\ ✓')]);
  const stored = await store.events.after(head, 10, NO_FILTER);
  expect(stored).toHaveLength(3);
  expect(ids(framed.events)).toEqual(stored.map((r) => r.id));
  expect(Array.from(framed.frames!.ids)).toEqual(stored.map((r) => r.id));
  expect(framed.frames!.buf.toString('utf8')).toBe(stored.map(frameOf).join(''));
  expect(Array.from(framed.frames!.ends)).toEqual(
    stored.map((_, i) =>
      Buffer.byteLength(
        stored
          .slice(0, i + 1)
          .map(frameOf)
          .join(''),
      ),
    ),
  );

  // A bus on the thread hands its subscribers the rows with those frames.
  const bus = await ClusterBus.open(thread, { maxUnstored: 100, retryMs: 50, pollMs: 60_000 });
  const delivered: { rows: EventRow[]; frames: FrameBlock | undefined; text: string | undefined }[] = [];
  bus.subscribe((batch, frames) => delivered.push({ rows: [...batch], frames, text: frames?.buf.toString('utf8') }));
  for (let i = 0; i < 300; i++) bus.publish({ severity: 'info', scope: 'test/bus', summary: `bus ${i}` });
  await waitFor(() => (delivered.reduce((n, d) => n + d.rows.length, 0) === 300 ? true : undefined), 'the bus’s events delivered');
  await bus.close();
  for (const d of delivered) {
    expect(d.frames).toBeDefined();
    expect(d.text).toBe(d.rows.map(frameOf).join(''));
  }
  const fromLog = await store.events.after(head + 3, 1000, NO_FILTER);
  expect(delivered.flatMap((d) => d.rows.map(frameOf))).toEqual(fromLog.map(frameOf));
  expect(deaths).toEqual([]);
});
