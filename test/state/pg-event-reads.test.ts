/**
 * Pages of the PostgreSQL event log (`EventStore.after`, src/state/pg/event-repo.ts) stop at
 * their limit: on a log that has just grown (its statistics trailing, as they always do at the
 * log's end), a page from any point reads its own rows in id order, not every row up to the head
 * and a sort of them. (Filtered pages, a job's events, a severity, a scope prefix, are read
 * through their indexes: without statistics the planner may sort a filter's matches after the
 * page's start, bounded by those matches, not by the log.) The plans are PostgreSQL's own (EXPLAIN ANALYZE on the server); the
 * answers are checked against the appended events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventsAfterSql } from '../../src/state/pg/event-repo.js';
import { openPgStateStore } from '../../src/state/pg/pg-state-store.js';
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
