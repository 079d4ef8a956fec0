/**
 * The job history's query (`JobStore.search`, src/state/job-query.ts) on both back ends, one
 * behaviour: filters by state, project and start time, newest first (start time, then id), and
 * pages that start after the last job of the previous one, so that following them visits every
 * job once, in order, also across jobs started at the same millisecond. On SQLite the statement
 * walks the `started_at` index and stops at the limit (its query plan says so).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import Database from '../../src/state/sqlite/binding.js';
import { jobSearchSql } from '../../src/state/sqlite/jobs-repo.js';
import type { JobQuery, StateStore, StoredJob } from '../../src/state/state-store.js';
import { newestFirst, type SeededJob, seededEnd, seededId } from '../helpers/job-history.js';
import { postgresBackend, sqliteBackend, type Backend } from '../helpers/state-backends.js';

const STATES = ['exited ok', 'exited failed', 'lost', 'running'] as const;
const PROJECTS = ['alpha', 'beta', 'gamma'] as const;
/** Jobs seeded: several share a start time (every third one), so ties are broken by id. */
const N = 600;

/** ISO time of job `i`: one a minute, every third one at the same time as the one before. */
const startOf = (i: number) => new Date(Date.UTC(2026, 0, 1) + (i - (i % 3 === 2 ? 1 : 0)) * 60_000).toISOString();

const seeded: SeededJob[] = Array.from({ length: N }, (_, i) => ({ proposalId: seededId(i), state: STATES[i % 4] as string, projectId: PROJECTS[i % 3] as string, startedAt: startOf(i) }));

/** What a query must answer, from the seeded list: newest first, then by id descending. */
function expected(q: Omit<JobQuery, 'limit' | 'after'>): string[] {
  return seeded
    .filter((j) => (q.states === undefined || q.states.length === 0 || q.states.includes(j.state)) && (q.projectId === undefined || j.projectId === q.projectId))
    .filter((j) => (q.from === undefined || j.startedAt >= q.from) && (q.to === undefined || j.startedAt < q.to))
    .sort(newestFirst)
    .map((j) => j.proposalId);
}

/** Follows the pages of `q` to the end, `limit` at a time. */
async function allPages(s: StateStore, q: Omit<JobQuery, 'limit' | 'after'>, limit: number): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let after: StoredJob | undefined;
  let pages = 0;
  for (;;) {
    const page = await s.jobs.search({ ...q, limit, ...(after ? { after: { startedAt: after.startedAt, proposalId: after.proposalId } } : {}) });
    pages++;
    ids.push(...page.map((j) => j.proposalId));
    if (page.length < limit) return { ids, pages };
    after = page.at(-1);
  }
}

const pg = postgresBackend();
const backends: Backend[] = [sqliteBackend(), pg];
beforeAll(() => Promise.all(backends.map((b) => b.start())), 180_000);
afterAll(() => Promise.all(backends.map((b) => b.stop())));

describe.each(backends)('the job history’s query on $name', (backend) => {
  let store: StateStore;
  beforeAll(async () => {
    const db = await backend.fresh();
    store = await db.open();
    for (const j of seeded) {
      await store.jobs.insert({ proposalId: j.proposalId, projectId: j.projectId, pid: 1, argv: ['node', 'x'], state: 'running', startedAt: j.startedAt, instanceId: 'a' });
      if (j.state !== 'running') await store.jobs.finish(j.proposalId, seededEnd(j.state, j.startedAt, 1, 0));
    }
  });
  afterAll(() => store?.close());

  it('answers newest first, ties of one start time by id, with the limit', async () => {
    const page = await store.jobs.search({ limit: 10 });
    expect(page.map((j) => j.proposalId)).toEqual(expected({}).slice(0, 10));
    expect(page[0]).toMatchObject({ proposalId: seededId(N - 1), projectId: PROJECTS[(N - 1) % 3], state: STATES[(N - 1) % 4], instanceId: 'a' });
  });

  it('filters by one or several states, a project, and a window of start times', async () => {
    for (const q of [
      { states: ['lost'] },
      { states: ['exited failed', 'running'] },
      { projectId: 'beta' },
      { from: startOf(100), to: startOf(200) },
      { states: ['exited ok'], projectId: 'gamma', from: startOf(50), to: startOf(450) },
      { projectId: 'nope' },
    ]) {
      expect(
        (await store.jobs.search({ ...q, limit: 500 })).map((j) => j.proposalId),
        JSON.stringify(q),
      ).toEqual(expected(q).slice(0, 500));
    }
  });

  it('pages: following them visits every job once, in order, whatever the page size and filters', async () => {
    for (const [q, limit] of [
      [{}, 7],
      [{}, 100],
      [{ states: ['exited failed'] }, 13],
      [{ projectId: 'alpha', from: startOf(30) }, 11],
    ] as const) {
      const { ids, pages } = await allPages(store, q, limit);
      const want = expected(q);
      expect(ids, JSON.stringify(q)).toEqual(want);
      expect(pages).toBe(Math.floor(want.length / limit) + 1);
    }
  });
});

describe('the job history’s query on sqlite: its plan', () => {
  it('walks the started_at index from the page’s start and sorts nothing, whatever the filters', async () => {
    const db = await (backends[0] as Backend).fresh();
    await (await db.open()).jobs.search({ limit: 1 });
    const raw = new Database(db.file as string, { readonly: true });
    try {
      for (const q of [
        { limit: 100 },
        { states: ['lost'], limit: 100 },
        { projectId: 'beta', states: ['exited ok', 'lost'], limit: 100 },
        { from: startOf(1), to: startOf(9), limit: 100, after: { startedAt: startOf(5), proposalId: seededId(5) } },
      ] satisfies JobQuery[]) {
        const { sql, params } = jobSearchSql(q);
        const plan = (raw.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as { detail: string }[]).map((r) => r.detail).join('\n');
        expect(plan, JSON.stringify(q)).toMatch(/jobs USING INDEX jobs_started/);
        // Ties of one start time are ordered by id as they come (a sort of each tie at most).
        expect(plan, JSON.stringify(q)).not.toMatch(/USE TEMP B-TREE FOR ORDER BY/);
      }
    } finally {
      raw.close();
      await db.close();
    }
  });
});
