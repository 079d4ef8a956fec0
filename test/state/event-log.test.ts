/**
 * Event persistence (src/state/sqlite/event-log.ts): the retention bound, through the real service
 * (CONSOLE_EVENT_RETENTION, `GET /api/events`, `GET /api/system-status`), and the log's
 * reads and id reservation on a real SQLite file (api-decisions.md, Events).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, describe, expect, it } from 'vitest';
import type { BusEvent } from '../../src/bus/event.js';
import { NO_FILTER, type EventFilter } from '../../src/bus/event.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog, type EventRow } from '../../src/state/sqlite/event-log.js';
import { allEvents } from '../helpers/events.js';
import { startTestService, type TestService, publishOn, storedOn } from '../helpers/service.js';

const RETENTION = 100;
/**
 * The most rows the table may hold with retention 100: retention runs once the count passes
 * `retention * (1 + RETENTION_SLACK) + 100` (RETENTION_SLACK = 0.05 in src/state/sqlite/event-log.ts).
 */
const BOUND = Math.floor(RETENTION * 1.05) + 100;

let t: TestService | undefined;
const cleanups: (() => void)[] = [];
afterEach(async () => {
  await t?.close();
  t = undefined;
  for (const fn of cleanups.splice(0)) fn();
});

function storedIds(t: TestService): number[] {
  const db = new Database(path.join(t.stateDir, 'console-state.db'), { fileMustExist: true, readonly: true });
  try {
    return (db.prepare('SELECT id FROM events ORDER BY id').all() as { id: number }[]).map((r) => r.id);
  } finally {
    db.close();
  }
}

async function busStatus(t: TestService): Promise<Record<string, unknown>> {
  const res = await t.get('/api/system-status');
  expect(res.status).toBe(200);
  return ((await res.json()) as { bus: Record<string, unknown> }).bus;
}

function publish(t: TestService, i: number): BusEvent {
  return publishOn(t, { severity: 'info', scope: 'test/retention', summary: `e${i}` });
}

describe('event log: retention through the service', () => {
  it('keeps the stored count bounded and the newest events while 1,000 are published over many flushes', async () => {
    // A flush at the end of every turn (no least interval between flushes): one per batch below.
    t = await startTestService({ store: 'empty', env: { CONSOLE_EVENT_RETENTION: String(RETENTION), CONSOLE_EVENT_FLUSH_INTERVAL_MS: '0' } });
    const published: BusEvent[] = [];
    for (let batch = 0; batch < 40; batch++) {
      for (let i = 0; i < 25; i++) published.push(publish(t, published.length));
      await storedOn(t); // one flush (and possibly one retention pass) per batch
      const ids = storedIds(t);
      expect(ids.length).toBeLessThanOrEqual(BOUND);
      // What is kept is always a contiguous tail of what was published.
      expect(ids).toEqual(published.slice(published.length - ids.length).map((e) => Number(e.id)));
    }
    expect(published).toHaveLength(1000);

    const ids = storedIds(t);
    expect(ids.length).toBeGreaterThanOrEqual(RETENTION);
    expect(ids.length).toBeLessThanOrEqual(BOUND);
    const newest = published.slice(-RETENTION).map((e) => Number(e.id));
    for (const id of newest) expect(ids).toContain(id);

    // `sinceId=0` starts after the deleted events and runs to the newest one.
    const listed = await allEvents(t.url);
    expect(listed.map((e) => Number(e.id))).toEqual(ids);
    expect(Number(listed[0]?.id)).toBeGreaterThan(Number(published[0]?.id));
    expect(listed.at(-1)).toEqual(published.at(-1));
    // Without sinceId: still the newest `limit` (everything stored here is within 200).
    const res = await t.get('/api/events?limit=100');
    expect(((await res.json()) as BusEvent[]).map((e) => e.id)).toEqual(published.slice(-100).map((e) => e.id));

    const bus = await busStatus(t);
    expect(bus.retention).toBe(RETENTION);
    expect(bus.stored).toBe(ids.length);
  });

  it('applies the bound to one large flush (1,000 events in one tick)', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_EVENT_RETENTION: String(RETENTION) } });
    const published = Array.from({ length: 1000 }, (_, i) => publish(t as TestService, i));
    await storedOn(t as TestService);
    const ids = storedIds(t);
    expect(ids.length).toBeGreaterThanOrEqual(RETENTION);
    expect(ids.length).toBeLessThanOrEqual(BOUND);
    expect(ids).toEqual(published.slice(-ids.length).map((e) => Number(e.id)));
  });

  it('reports the configured retention in GET /api/system-status (default 200,000)', async () => {
    t = await startTestService({ store: 'empty' });
    expect((await busStatus(t)).retention).toBe(200_000);
    await t.close();
    t = await startTestService({ store: 'empty', env: { CONSOLE_EVENT_RETENTION: '5000' } });
    expect((await busStatus(t)).retention).toBe(5000);
  });

  it('trims events kept by an earlier run with a larger retention once new events are written', async () => {
    t = await startTestService({ store: 'empty', env: { CONSOLE_EVENT_RETENTION: '2000' } });
    for (let i = 0; i < 1000; i++) publish(t, i);
    await storedOn(t as TestService);
    expect(storedIds(t)).toHaveLength(1000);
    await t.stop();

    const root = t.tmp;
    t = await startTestService({ tmp: root, env: { CONSOLE_EVENT_RETENTION: String(RETENTION) } });
    const last = publish(t, 1000);
    await storedOn(t as TestService);
    const ids = storedIds(t);
    expect(ids.length).toBeLessThanOrEqual(BOUND);
    expect(ids.at(-1)).toBe(Number(last.id));
  });
});

describe('event log: reads and ids on a state database', () => {
  function openLog(retention = 1000): { db: Db; log: EventLog; file: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-eventlog-'));
    const file = path.join(dir, 'state.db');
    const db = openStateDb(file);
    cleanups.push(() => {
      if (db.open) db.close();
      fs.rmSync(dir, { recursive: true, force: true });
    });
    return { db, log: new EventLog(db, retention), file };
  }

  const row = (log: EventLog, severity: EventRow['severity'], scope: string): EventRow => {
    const id = log.takeId();
    return { id, severity, scope, data: JSON.stringify({ id: String(id), severity, scope }) };
  };

  it('reads after an id up to a bound, and the newest, ascending, with filters', () => {
    const { log } = openLog();
    const rows = Array.from({ length: 20 }, (_, i) => row(log, i % 2 === 0 ? 'info' : 'failure', i % 4 < 2 ? 'a/x' : 'b/x'));
    log.append(rows);
    const ids = (rs: readonly EventRow[]) => rs.map((r) => r.id);

    expect(ids(log.after(rows[4]!.id, 5, NO_FILTER))).toEqual(ids(rows.slice(5, 10)));
    expect(ids(log.after(rows[4]!.id, 100, NO_FILTER, rows[7]!.id))).toEqual(ids(rows.slice(5, 8)));
    expect(ids(log.newest(3, NO_FILTER))).toEqual(ids(rows.slice(17)));
    const failuresA = rows.filter((r) => r.severity === 'failure' && r.scope.startsWith('a/'));
    expect(ids(log.after(0, 100, { severities: ['failure'], scopePrefix: 'a/' }))).toEqual(ids(failuresA));
    expect(ids(log.newest(2, { severities: ['failure'], scopePrefix: 'a/' }))).toEqual(ids(failuresA.slice(-2)));
    expect(log.after(0, 1, NO_FILTER)[0]).toEqual(rows[0]);
  });

  it('reads one proposal’s events from the runs: interleaved with others, across batches and segments, after any id, newest, with other filters', () => {
    const { db, log } = openLog(400); // segments of 100
    const props = ['gen_aaaaaaaaaaaa', 'gen_bbbbbbbbbbbb', 'gen_cccccccccccc'];
    const all: EventRow[] = [];
    // Batches of varied sizes; stretches of one proposal, single events, and events about none.
    for (let b = 0; b < 12; b++) {
      const batch: EventRow[] = [];
      for (let i = 0; i < 7 + b * 5; i++) {
        const id = log.takeId();
        const k = (i >> (b % 3)) % 4;
        const proposalId = k === 3 ? null : props[(k + b) % 3]!;
        const severity = id % 3 === 0 ? 'warning' : 'info';
        batch.push({ id, severity, scope: id % 2 ? 'engine/generation' : 'chat/x', proposalId, data: JSON.stringify({ id: String(id), proposalId }) });
      }
      log.append(batch);
      all.push(...batch);
    }
    expect(log.size).toBe(all.length);
    // One run per stretch of consecutive events about one proposal, within a batch and a segment.
    const stored = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'event_segment_%_runs'`).all() as { name: string }[]).flatMap(
      ({ name }) => db.prepare(`SELECT proposal_id, first_id, last_id FROM ${name}`).raw().all() as [string, number, number][],
    );
    for (const [p, first, last] of stored) {
      const run = all.filter((r) => r.id >= first && r.id <= last);
      expect(run.length).toBe(last - first + 1);
      expect(run.every((r) => r.proposalId === p)).toBe(true);
    }
    expect(stored.reduce((n, [, first, last]) => n + last - first + 1, 0)).toBe(all.filter((r) => r.proposalId != null).length);
    const segments = (db.prepare(`SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name LIKE 'event_segment_%_runs'`).get() as { n: number }).n;
    expect(segments).toBeGreaterThanOrEqual(3);
    const ids = (rs: readonly EventRow[]) => rs.map((r) => r.id);
    for (const p of props) {
      const mine = all.filter((r) => r.proposalId === p);
      expect(mine.length).toBeGreaterThan(20);
      const filter = { severities: null, scopePrefix: null, proposalId: p };
      for (const since of [0, ...all.map((r) => r.id)]) {
        expect(ids(log.after(since, 7, filter)), `${p} after ${since}`).toEqual(ids(mine.filter((r) => r.id > since).slice(0, 7)));
      }
      expect(ids(log.after(0, 1000, filter, all[150]!.id))).toEqual(ids(mine.filter((r) => r.id <= all[150]!.id)));
      for (const n of [1, 9, 1000]) expect(ids(log.newest(n, filter))).toEqual(ids(mine.slice(-n)));
      const narrow = { severities: ['warning' as const], scopePrefix: 'engine/', proposalId: p };
      const narrowed = mine.filter((r) => r.severity === 'warning' && r.scope.startsWith('engine/'));
      expect(ids(log.after(0, 1000, narrow))).toEqual(ids(narrowed));
      expect(ids(log.newest(3, narrow))).toEqual(ids(narrowed.slice(-3)));
    }
    expect(log.after(0, 10, { severities: null, scopePrefix: null, proposalId: 'gen_000000000000' })).toEqual([]);
  });

  it('reads replay pages as frames, one per event: the same bytes as each row framed, across segments, pages, bounds and filters', () => {
    const { log } = openLog(400); // segments of 100
    const all: EventRow[] = [];
    for (let b = 0; b < 9; b++) {
      const batch: EventRow[] = [];
      for (let i = 0; i < 40 + b; i++) {
        const id = log.takeId();
        const scope = id % 5 === 0 ? 'chat/x' : 'engine/generation';
        // Non-ASCII, escapes and an empty detail: SQLite must write the stored text unchanged.
        const proposalId = id % 3 === 0 ? 'gen_aaaaaaaaaaaa' : null;
        batch.push({ id, severity: id % 7 === 0 ? 'failure' : 'info', scope, proposalId, data: JSON.stringify({ id: String(id), scope, detail: i % 3 ? `é ✓ \\n "${i}"` : '' }) });
      }
      log.append(batch);
      all.push(...batch);
    }
    const framed = (rows: readonly EventRow[]) => rows.map((r) => `id: ${r.id}\ndata: ${r.data}\n\n`);
    const last = all.at(-1)!.id;
    const filters: EventFilter[] = [
      NO_FILTER,
      { severities: ['failure'], scopePrefix: null },
      { severities: null, scopePrefix: 'chat/' },
      { severities: ['info'], scopePrefix: 'engine/' },
      { severities: null, scopePrefix: null, proposalId: 'gen_aaaaaaaaaaaa' },
    ];
    for (const filter of filters) {
      const pass = all.filter(
        (r) =>
          (filter.severities === null || filter.severities.includes(r.severity)) &&
          (filter.scopePrefix === null || r.scope.startsWith(filter.scopePrefix)) &&
          (filter.proposalId == null || r.proposalId === filter.proposalId),
      );
      for (const since of [0, all[0]!.id, all[99]!.id, all[250]!.id, last]) {
        for (const [limit, upTo] of [
          [500, last],
          [37, last],
          [500, all[300]!.id],
          [1, all[120]!.id],
        ] as const) {
          const want = pass.filter((r) => r.id > since && r.id <= upTo).slice(0, limit);
          expect(log.framesAfter(since, limit, filter, upTo), JSON.stringify({ filter, since, limit, upTo })).toEqual(framed(want));
        }
      }
    }
  });

  it('never reuses ids that were handed out but never written (a crash before the flush)', () => {
    const { db, log, file } = openLog();
    const written = [row(log, 'info', 'a'), row(log, 'info', 'a')];
    log.append(written);
    const lost = [log.takeId(), log.takeId(), log.takeId()]; // handed out, then the process dies
    db.close();

    const db2 = openStateDb(file);
    try {
      const next = new EventLog(db2, 1000).takeId();
      expect(next).toBeGreaterThan(Math.max(...lost));
    } finally {
      db2.close();
    }
  });

  it('keeps the newest `retention` rows, and at most one segment more, after a retention pass', () => {
    const { db, log } = openLog(RETENTION);
    const rows = Array.from({ length: BOUND + 1 }, () => row(log, 'info', 'a'));
    log.append(rows);
    const stored = (db.prepare('SELECT id FROM events ORDER BY id').all() as { id: number }[]).map((r) => r.id);
    // A contiguous run ending with the newest, no shorter than the bound, no longer than one segment more.
    expect(stored).toEqual(rows.slice(-stored.length).map((r) => r.id));
    expect(stored.length).toBeGreaterThanOrEqual(RETENTION);
    expect(stored.length).toBeLessThanOrEqual(RETENTION + log.segmentSize);
    expect(log.size).toBe(stored.length);
  });
});

describe('event log: segment tables', () => {
  function temp(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-segments-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    return path.join(dir, 'state.db');
  }
  const segmentTables = (db: Db) =>
    (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'event_segment_%' AND name NOT LIKE '%_runs' ORDER BY name`).all() as { name: string }[]).map((r) => r.name);
  const put = (log: EventLog, n: number) => log.append(Array.from({ length: n }, () => ({ id: log.takeId(), severity: 'info' as const, scope: 's', data: '{}' })));

  it('drops whole old segments, keeps their number bounded, and the view sees exactly the kept rows', () => {
    const file = temp();
    const db = openStateDb(file);
    const log = new EventLog(db, 1000); // segments of 250
    for (let i = 0; i < 40; i++) put(log, 97);
    const tables = segmentTables(db);
    expect(tables.length).toBeLessThanOrEqual(1000 / log.segmentSize + 1);
    const viewCount = (db.prepare('SELECT count(*) AS c FROM events').get() as { c: number }).c;
    const tableCount = tables.reduce((n, t) => n + (db.prepare(`SELECT count(*) AS c FROM ${t}`).get() as { c: number }).c, 0);
    expect(viewCount).toBe(tableCount);
    expect(viewCount).toBe(log.size);
    expect(log.size).toBeGreaterThanOrEqual(1000);
    expect(log.after(0, 10_000, NO_FILTER).map((r) => r.id)).toEqual(log.newest(10_000, NO_FILTER).map((r) => r.id));
    db.close();
  });

  it('upgrades a segment indexed by proposal (the earlier layout, with a proposal_id column) to runs, one per stretch of a proposal, and reads it and new rows by proposal', () => {
    const file = temp();
    const db = openStateDb(file); // the migrations' first segment: no proposal_id column yet
    db.exec(`ALTER TABLE event_segment_1 ADD COLUMN proposal_id TEXT;
             CREATE INDEX event_segment_1_proposal ON event_segment_1 (proposal_id) WHERE proposal_id IS NOT NULL`);
    const insert = db.prepare(`INSERT INTO event_segment_1 (id, severity, scope, proposal_id, data) VALUES (?, 'info', 's', ?, '{}')`);
    const owners = ['gen_aaaaaaaaaaaa', null, 'gen_bbbbbbbbbbbb', 'gen_aaaaaaaaaaaa', 'gen_bbbbbbbbbbbb', null, 'gen_aaaaaaaaaaaa'];
    for (const [i, p] of owners.entries()) insert.run(i + 1, p);
    const log = new EventLog(db, 1000);
    expect(db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event_segment_1'`).all()).toEqual([]);
    const runs = () => db.prepare(`SELECT proposal_id, first_id, last_id FROM event_segment_1_runs ORDER BY first_id`).raw().all();
    const [a, b] = ['gen_aaaaaaaaaaaa', 'gen_bbbbbbbbbbbb'];
    expect(runs()).toEqual([
      [a, 1, 1],
      [b, 3, 3],
      [a, 4, 4],
      [b, 5, 5],
      [a, 7, 7],
    ]);
    const more = [log.takeId(), log.takeId()].map((id) => ({ id, severity: 'info' as const, scope: 's', proposalId: 'gen_aaaaaaaaaaaa', data: '{}' }));
    log.append(more);
    expect(runs().at(-1)).toEqual([a, more[0]!.id, more[1]!.id]);
    const filter = (proposalId: string) => ({ severities: null, scopePrefix: null, proposalId });
    expect(log.after(0, 100, filter('gen_aaaaaaaaaaaa')).map((r) => r.id)).toEqual([1, 4, 7, ...more.map((r) => r.id)]);
    expect(log.after(4, 2, filter('gen_aaaaaaaaaaaa')).map((r) => r.id)).toEqual([7, more[0]!.id]);
    expect(log.newest(100, filter('gen_bbbbbbbbbbbb')).map((r) => r.id)).toEqual([3, 5]);
    db.close();
  });

  it('continues in the newest segment after a restart, with ids still increasing', () => {
    const file = temp();
    let db = openStateDb(file);
    let log = new EventLog(db, 1000);
    put(log, 10);
    const before = segmentTables(db);
    const lastBefore = log.lastIssuedId;
    db.close();
    db = openStateDb(file);
    log = new EventLog(db, 1000);
    put(log, 10);
    expect(segmentTables(db)).toEqual(before);
    expect(log.size).toBe(20);
    const ids = log.after(0, 100, NO_FILTER).map((r) => r.id);
    expect(ids.slice(10).every((id) => id > lastBefore)).toBe(true);
    db.close();
  });
});

describe('event log: a caller transaction that rolls back', () => {
  it('recovers when a segment it created inside the transaction is rolled back', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-rollback-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const db = openStateDb(path.join(dir, 'state.db'));
    const log = new EventLog(db, 100); // segments of 100
    const rows = (n: number) => Array.from({ length: n }, () => ({ id: log.takeId(), severity: 'info' as const, scope: 's', data: '{}' }));
    log.append(rows(100)); // the first segment is full
    // A caller's transaction appends (rotating to a new segment table), then fails.
    expect(() =>
      db.transaction(() => {
        log.append(rows(5));
        throw new Error('the caller fails after the events were written');
      })(),
    ).toThrow('the caller fails');
    // The next append still works, and everything readable is consistent.
    const next = rows(3);
    log.append(next);
    const stored = log.after(0, 1000, NO_FILTER).map((r) => r.id);
    expect(stored.slice(-3)).toEqual(next.map((r) => r.id));
    expect(log.size).toBe(stored.length);
    expect((db.prepare('SELECT count(*) AS c FROM events').get() as { c: number }).c).toBe(stored.length);
    db.close();
  });
});

describe('event log: reads filtered by severity and scope', () => {
  const _SEVERITIES = ['info', 'success', 'failure', 'warning', 'fallback'] as const;
  const SCOPES = ['engine/generation', 'engine', 'engine/memory', 'chat/proposals', 'chat/slash', 'test/é/x', 'engine/generation2'];

  /** A log of 200,000 events over four segments, and every row as JS keeps it, for comparison. */
  function filled(): { log: EventLog; db: Db; rows: EventRow[]; statements: string[]; explain: (sql: string) => string[] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'event-pairs-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const db = openStateDb(path.join(dir, 'state.db'));
    cleanups.push(() => db.close());
    // Every statement the log prepares, to read the plans of those a read runs.
    const statements: string[] = [];
    const prepare = db.prepare.bind(db);
    (db as { prepare: typeof db.prepare }).prepare = ((sql: string) => {
      statements.push(sql);
      return prepare(sql);
    }) as typeof db.prepare;
    const log = new EventLog(db, 200_000);
    const rows: EventRow[] = [];
    for (let b = 0; b < 400; b++) {
      const batch: EventRow[] = [];
      for (let i = 0; i < 500; i++) {
        const id = log.takeId();
        // Mostly one job's lines, the rest spread: rare pairs among frequent ones.
        const k = id % 97;
        const severity = k === 0 ? 'failure' : k < 3 ? 'warning' : k === 50 ? 'fallback' : 'info';
        const scope = k < 90 ? 'engine/generation' : (SCOPES[k % SCOPES.length] as string);
        batch.push({ id, severity, scope, data: JSON.stringify({ id: String(id), severity, scope }) });
      }
      log.append(batch);
      rows.push(...batch);
    }
    // The plans are read with the database's own prepare: not counted.
    const explain = (sql: string) => (prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...(sql.includes('?') ? ['[1]'] : [])) as { detail: string }[]).map((p) => p.detail);
    return { log, db, rows, statements, explain };
  }

  it('answers exactly what a scan would, for matching, rare and empty filters, pages and the newest', () => {
    const { log, rows } = filled();
    const filters = [
      { severities: ['failure'] as const, scopePrefix: null },
      { severities: null, scopePrefix: 'chat/' },
      { severities: null, scopePrefix: 'engine/generation' },
      { severities: ['warning', 'fallback'] as const, scopePrefix: 'engine' },
      { severities: null, scopePrefix: 'nothing/' },
      { severities: ['success'] as const, scopePrefix: null },
      { severities: null, scopePrefix: 'test/é' },
    ].map((f): EventFilter => ({ ...f, severities: f.severities === null ? null : [...f.severities] }));
    const pass = (f: EventFilter, r: EventRow) => (f.severities === null || f.severities.includes(r.severity)) && (f.scopePrefix === null || r.scope.startsWith(f.scopePrefix));
    for (const f of filters) {
      const all = rows.filter((r) => pass(f, r)).map((r) => r.id);
      expect(
        log.newest(500, f).map((r) => r.id),
        JSON.stringify(f),
      ).toEqual(all.slice(-500));
      // Paged from the start and from the middle, within a bound.
      for (const since of [0, rows[77_777]!.id]) {
        const want = all.filter((id) => id > since).slice(0, 500);
        expect(
          log.after(since, 500, f).map((r) => r.id),
          JSON.stringify({ f, since }),
        ).toEqual(want);
      }
      const upTo = rows[120_000]!.id;
      expect(log.after(0, 10_000, f, upTo).map((r) => r.id)).toEqual(all.filter((id) => id <= upTo).slice(0, 10_000));
    }
  });

  it('reads only the rows it returns: by id, never a range of the segments', () => {
    const { log, statements, explain } = filled();
    for (const f of [
      { severities: null, scopePrefix: 'nothing/' },
      { severities: ['failure' as const], scopePrefix: null },
      { severities: ['success' as const], scopePrefix: 'chat/' },
    ]) {
      const before = statements.length;
      log.after(0, 500, f);
      log.newest(500, f);
      // Statements are prepared once: the reads' are those of the segments' reads by id.
      const used = before === statements.length ? statements.filter((s) => /json_each/.test(s)) : statements.slice(before);
      expect(used.length).toBeGreaterThan(0);
      for (const sql of used) {
        const plan = explain(sql);
        for (const step of plan.filter((d) => /event_segment_/.test(d))) expect(step, sql).toMatch(/USING INTEGER PRIMARY KEY \(rowid=\?\)/);
      }
    }
  });
});
