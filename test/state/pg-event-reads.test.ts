/**
 * Pages of the PostgreSQL event log (`EventStore.after`, src/state/pg/event-repo.ts) stop at
 * their limit: on a log that has just grown (its statistics trailing, as they always do at the
 * log's end), a page from any point reads its own rows in id order, not every row up to the head
 * and a sort of them. (A job's events are read through their index: without statistics the
 * planner may sort the job's events after the page's start, bounded by those, not by the log.)
 * Pages filtered by severity or scope prefix read the filter's (severity, scope) pairs from one
 * index and merge each pair's events in id order, stopping at the page, whether the filter
 * matches none, a few or most events. The plans are PostgreSQL's own (EXPLAIN ANALYZE on the
 * server); the answers are checked against the appended events.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { byKindsSql, kindsSql, type EventKind } from '../../src/state/pg/event-kinds.js';
import { eventsAfterSql, pgEvents } from '../../src/state/pg/event-repo.js';
import { type Exec, poolExec } from '../../src/state/pg/exec.js';
import { openPgStateStore } from '../../src/state/pg/pg-state-store.js';
import type { EventFilter } from '../../src/bus/event.js';
import type { EventDraft, StateStore } from '../../src/state/state-store.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { TEST_BOUNDS } from '../helpers/state-backends.js';

const EVENTS = 30_000;
const PAGE = 500;
let server: TestPostgres;
let store: StateStore;
let dbName: string;

/** Job lines of three jobs, as a flood appends them, with a warning every 97th. */
const draft = (i: number): EventDraft => ({
  ts: new Date(Date.UTC(2026, 0, 1, 0, 0, i % 60)).toISOString(),
  severity: i % 97 === 0 ? 'warning' : 'info',
  scope: `proposal/p-${i % 3}/job`,
  summary: `line ${i}`,
  detail: null,
  proposalId: `p-${i % 3}`,
  payload: { line: `stamp ${i}` },
});

interface PlanNode {
  'Node Type': string;
  'Actual Rows': number;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

/** Every node of a plan, depth first. */
function nodes(n: PlanNode): PlanNode[] {
  return [n, ...(n.Plans ?? []).flatMap(nodes)];
}

/** The executed plan of one page, as the store sends it. */
async function planOf(sinceId: number, filter: Parameters<typeof eventsAfterSql>[2], upTo = Number.MAX_SAFE_INTEGER): Promise<PlanNode> {
  const { text, values } = eventsAfterSql(sinceId, PAGE, filter, upTo);
  const r = await server.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values, dbName);
  return (r.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan;
}

beforeAll(async () => {
  server = await startPostgres();
  const url = await server.freshDatabase();
  dbName = new URL(url).pathname.slice(1);
  store = await openPgStateStore({ ...TEST_BOUNDS, eventRetention: 1_000_000, url, connectTimeoutMs: 10_000, poolSize: 4 });
  // Appended as a flood does, in batches; no ANALYZE after it, as after any burst.
  for (let i = 1; i <= EVENTS; i += 1000) await store.events.append(Array.from({ length: 1000 }, (_, k) => draft(i + k)));
}, 600_000);

afterAll(async () => {
  await store?.close();
  await server?.stop();
});

describe('PostgreSQL event pages', () => {
  const NONE = { severities: null, scopePrefix: null };

  it('from the start, the middle and near the head of a log just grown: the rows of the page alone, in id order, no sort', async () => {
    for (const since of [0, 10_000, EVENTS - 2_000, EVENTS - 100]) {
      for (const upTo of [Number.MAX_SAFE_INTEGER, EVENTS]) {
        const plan = await planOf(since, NONE, upTo);
        const all = nodes(plan);
        const where = `since ${since}, upTo ${upTo}: ${JSON.stringify(all.map((n) => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''} ${n['Actual Rows']}`))}`;
        expect(
          all.map((n) => n['Node Type']),
          where,
        ).not.toContain('Sort');
        expect(Math.max(...all.map((n) => n['Actual Rows'])), where).toBeLessThanOrEqual(PAGE);
      }
    }
  });

  it('answers what was appended: every page in order, bounded by upTo, filters applied', async () => {
    let since = 0;
    let seen = 0;
    for (;;) {
      const rows = await store.events.after(since, PAGE, NONE, 12_345);
      if (rows.length === 0) break;
      for (const r of rows) expect(Number(r.id)).toBe(++seen);
      since = Number(rows[rows.length - 1]?.id);
    }
    expect(seen).toBe(12_345);
    const job = await store.events.after(29_000, PAGE, { severities: null, scopePrefix: null, proposalId: 'p-2' });
    const ids = (from: number, to: number, keep: (id: number) => boolean) => Array.from({ length: to - from + 1 }, (_, k) => from + k).filter(keep);
    expect(job.map((r) => Number(r.id))).toEqual(ids(29_001, EVENTS, (id) => id % 3 === 2));
    const warnings = await store.events.after(0, PAGE, { severities: ['warning'], scopePrefix: null });
    expect(warnings.map((r) => Number(r.id))).toEqual(ids(1, EVENTS, (id) => id % 97 === 0));
  });
});

describe('PostgreSQL filtered reads (severity, scope prefix): through the pairs of one index', () => {
  /** Every event appended, as [id, severity, scope], in id order. */
  const all: [number, string, string][] = [];
  /** Rare kinds after the flood, then more lines: the filters below match few, many or none. */
  const extra = (i: number): EventDraft => {
    const k = i % 40;
    const [severity, scope] = i > 40 ? ['info', 'proposal/p-0/job'] : k < 20 ? ['failure', 'chat/proposals'] : k < 30 ? ['success', 'a_b%c/x'] : ['fallback', 'test/é/x'];
    return { ts: new Date(Date.UTC(2026, 0, 1)).toISOString(), severity: severity as EventDraft['severity'], scope, summary: `extra ${i}`, detail: null, payload: {} };
  };
  beforeAll(async () => {
    for (let i = 1; i <= EVENTS; i++) all.push([i, draft(i).severity, draft(i).scope]);
    const drafts = Array.from({ length: 3040 }, (_, k) => extra(k + 1));
    const stored = await store.events.append(drafts);
    for (const [k, e] of stored.entries()) all.push([Number(e?.id), drafts[k]!.severity, drafts[k]!.scope]);
  });

  const FILTERS: EventFilter[] = [
    { severities: ['failure'], scopePrefix: null },
    { severities: null, scopePrefix: 'chat/' },
    { severities: null, scopePrefix: 'a_b%' },
    { severities: null, scopePrefix: 'a_' },
    { severities: null, scopePrefix: 'a%' },
    { severities: null, scopePrefix: 'test/é' },
    { severities: ['warning'], scopePrefix: 'proposal/p-1' },
    { severities: ['success', 'fallback'], scopePrefix: null },
    { severities: null, scopePrefix: 'nothing/' },
    { severities: ['success'], scopePrefix: 'chat/' },
    { severities: ['info'], scopePrefix: 'proposal/' },
    { severities: null, scopePrefix: '' },
  ];
  const passes = (f: (typeof FILTERS)[number], [, severity, scope]: [number, string, string]) =>
    (f.severities === null || (f.severities as readonly string[]).includes(severity)) && (f.scopePrefix === null || scope.startsWith(f.scopePrefix));

  it('answers what a walk of the log would: pages from any point, bounded by upTo, and the newest', async () => {
    for (const f of FILTERS) {
      const ids = all.filter((e) => passes(f, e)).map(([id]) => id);
      for (const [since, upTo] of [
        [0, Number.MAX_SAFE_INTEGER],
        [15_000, Number.MAX_SAFE_INTEGER],
        [0, 20_000],
        [EVENTS + 5, Number.MAX_SAFE_INTEGER],
      ] as const) {
        const want = ids.filter((id) => id > since && id <= upTo).slice(0, PAGE);
        expect(
          (await store.events.after(since, PAGE, f, upTo)).map((r) => Number(r.id)),
          JSON.stringify({ f, since, upTo }),
        ).toEqual(want);
      }
      expect(
        (await store.events.newest(PAGE, f)).map((r) => Number(r.id)),
        JSON.stringify(f),
      ).toEqual(ids.slice(-PAGE));
    }
  });

  it('reads the pairs and its page alone, whether the filter matches none, a few or most events', async () => {
    const explain = async (text: string, values: unknown[]) => {
      const r = await server.query<{ 'QUERY PLAN': [{ Plan: PlanNode }] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${text}`, values, dbName);
      return nodes((r.rows[0] as { 'QUERY PLAN': [{ Plan: PlanNode }] })['QUERY PLAN'][0].Plan);
    };
    const described = (plan: PlanNode[]) => JSON.stringify(plan.map((n) => `${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''} ${n['Actual Rows']}`));
    for (const f of FILTERS) {
      const k = kindsSql(f.severities, f.scopePrefix);
      const kindsPlan = await explain(k.text, k.values);
      const found = (await server.query<{ severities: string[]; scopes: string[] }>(k.text, k.values, dbName)).rows[0]!;
      const kinds: EventKind[] = found.severities.map((severity, i) => ({ severity, scope: found.scopes[i]! }));
      // The pairs: one index probe per pair and severity, whatever the log holds.
      expect(
        kindsPlan.map((n) => n['Node Type']),
        `${JSON.stringify(f)}: ${described(kindsPlan)}`,
      ).not.toContain('Seq Scan');
      for (const n of kindsPlan) expect(n['Actual Rows'], `${JSON.stringify(f)}: ${described(kindsPlan)}`).toBeLessThanOrEqual(kinds.length + 5);
      if (kinds.length === 0) continue;
      for (const since of [0, 15_000]) {
        const page = byKindsSql(kinds, since, Number.MAX_SAFE_INTEGER, PAGE, 'ASC');
        const plan = await explain(page.text, page.values);
        const where = `${JSON.stringify({ f, since })}: ${described(plan)}`;
        expect(
          plan.map((n) => n['Node Type']),
          where,
        ).not.toContain('Seq Scan');
        // Each pair's branch stops once the merge has its page.
        for (const n of plan) expect(n['Actual Rows'], where).toBeLessThanOrEqual(PAGE + 1);
      }
    }
  });

  it('indexes each stored event three times: by id, by job, and by its pair', async () => {
    const r = await server.query<{ indexname: string }>(`SELECT indexname FROM pg_indexes WHERE tablename = 'events' ORDER BY indexname`, [], dbName);
    expect(r.rows.map((x) => x.indexname)).toEqual(['events_kind', 'events_pkey', 'events_proposal']);
  });
});

describe('PostgreSQL filtered reads while events of a new pair are stored', () => {
  it('skips no event of a pair that appeared between reading the pairs and reading the page', async () => {
    const pool = new pg.Pool({ connectionString: server.urlOf(dbName), max: 2 });
    pool.on('error', () => undefined);
    try {
      const real = poolExec(pool);
      // Between the two statements of a filtered read, another writer stores an event of a pair the read
      // has not seen, then more of one it has.
      let between: (() => Promise<unknown>) | null = null;
      const x: Exec = {
        ...real,
        q: async (sql, params) => {
          const r = await real.q(sql, params);
          const run = sql.includes('WITH RECURSIVE') ? between : null;
          if (run) {
            between = null;
            await run();
          }
          return r as never;
        },
      };
      const events = pgEvents(x, x, 1_000_000);
      const failure = (scope: string, summary: string): EventDraft => ({ ts: new Date().toISOString(), severity: 'failure', scope, summary, detail: null, payload: {} });
      const filter = { severities: ['failure'], scopePrefix: null } as const;
      // A pair the read knows, and the head it starts from.
      await store.events.append([failure('chat/proposals', 'before')]);
      const head = await store.events.lastId();
      between = () => store.events.append([failure('rare/new', 'the new pair'), ...Array.from({ length: 10 }, (_, i) => failure('chat/proposals', `after it ${i}`))]);
      const seen: string[] = [];
      let since = head;
      for (let reads = 0; reads < 5; reads++) {
        const page = await events.after(since, PAGE, filter);
        for (const r of page) seen.push(JSON.parse(r.data).summary as string);
        if (page.length > 0) since = Number(page.at(-1)?.id);
      }
      expect(seen).toEqual(['the new pair', ...Array.from({ length: 10 }, (_, i) => `after it ${i}`)]);
    } finally {
      await pool.end();
    }
  });
});
