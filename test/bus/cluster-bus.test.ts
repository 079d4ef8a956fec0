/**
 * The cluster bus on its own (src/bus/cluster-bus.ts), two of them on one real PostgreSQL
 * database as two instances would be, woken by a real LISTEN connection: every event of both
 * reaches the subscribers of both, in id order, each once (an append's own rows delivered
 * directly, the other's read from the log); a publish that must be stored is refused while the
 * database is away, and held events are stored in order once it is back.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ClusterBus } from '../../src/bus/cluster-bus.js';
import type { EventRow } from '../../src/bus/local-event-log.js';
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
