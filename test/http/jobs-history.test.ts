/**
 * `GET /api/jobs` as operators use it at scale: 10,000 jobs in the history (CONSOLE_JOB_HISTORY's
 * default), filtered by state, project and start-time window, paged with `X-Next-Cursor` (and
 * `Link: rel="next"`) to the end, every job once, in order; bad filters answered 400 or 422.
 * The jobs are written to the service's own state database, as its supervisor writes them.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newestFirst, seededJobs, seededStart as startOf, seedJobs, type SeededJob as Seeded } from '../helpers/job-history.js';
import { startTestService, type TestService } from '../helpers/service.js';

const N = 10_000;
const seeded = seededJobs(N);

let t: TestService;
beforeAll(async () => {
  t = await startTestService();
  seedJobs(t, seeded);
});
afterAll(() => t?.close());

interface JobJson {
  proposalId: string;
  state: string;
  projectId: string;
  startedAt: string;
}

/** Follows a query's pages to the end through `X-Next-Cursor`, checking `Link` on the way. */
async function follow(query: string): Promise<{ ids: string[]; pages: number }> {
  const ids: string[] = [];
  let pages = 0;
  let cursor: string | null = null;
  for (;;) {
    const res = await t.get(`/api/jobs?${query}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(res.status).toBe(200);
    const page = (await res.json()) as JobJson[];
    pages++;
    ids.push(...page.map((j) => j.proposalId));
    cursor = res.headers.get('x-next-cursor');
    if (cursor === null) {
      expect(res.headers.get('link')).toBeNull();
      return { ids, pages };
    }
    const next = new URLSearchParams(query);
    next.set('cursor', cursor);
    expect(res.headers.get('link')).toBe(`</api/jobs?${next}>; rel="next"`);
  }
}

describe('GET /api/jobs with 10,000 jobs in the history', () => {
  it('answers the newest page, and pages through the whole history, every job once, in order', async () => {
    const res = await t.get('/api/jobs');
    const first = (await res.json()) as JobJson[];
    const all = [...seeded].sort(newestFirst);
    expect(first.map((j) => j.proposalId)).toEqual(all.slice(0, 100).map((j) => j.proposalId));
    expect(res.headers.get('x-next-cursor')).toMatch(/^[A-Za-z0-9_-]+$/);
    const { ids, pages } = await follow('limit=500');
    // One more job than a page is read: the last full page says there is no next one.
    expect(pages).toBe(N / 500);
    expect(ids).toEqual(all.map((j) => j.proposalId));
  });

  it('filters by state (one or several), project and start-time window, paged', async () => {
    const cases: [string, (j: Seeded) => boolean][] = [
      ['state=lost&limit=200', (j) => j.state === 'lost'],
      ['state=lost&state=exited+failed&limit=300', (j) => j.state === 'lost' || j.state === 'exited failed'],
      ['projectId=night-market&limit=500', (j) => j.projectId === 'night-market'],
      [`from=${encodeURIComponent(startOf(2000))}&to=${encodeURIComponent(startOf(2600))}&limit=250`, (j) => j.startedAt >= startOf(2000) && j.startedAt < startOf(2600)],
      // A window given with an offset is the same instants.
      [
        'from=2026-01-03T02:00:00%2B02:00&to=2026-01-03T05:00:00%2B02:00&state=exited+ok&project_id=old-pilot',
        (j) => j.startedAt >= '2026-01-03T00:00:00.000Z' && j.startedAt < '2026-01-03T03:00:00.000Z' && j.state === 'exited ok' && j.projectId === 'old-pilot',
      ],
    ];
    for (const [query, keep] of cases) {
      const { ids } = await follow(query);
      expect(ids, query).toEqual(
        seeded
          .filter(keep)
          .sort(newestFirst)
          .map((j) => j.proposalId),
      );
      expect(ids.length, query).toBeGreaterThan(0);
    }
  });

  it('lets a console on an allowed origin read the next page’s cursor (CORS exposes it)', async () => {
    const res = await t.get('/api/jobs?limit=10', { headers: { origin: 'http://localhost:5173' } });
    expect(res.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(res.headers.get('access-control-expose-headers')?.split(/,\s*/)).toEqual(expect.arrayContaining(['X-Next-Cursor', 'Link']));
    expect(res.headers.get('x-next-cursor')).not.toBeNull();
  });

  it('a filter nothing matches answers an empty page, without a next cursor', async () => {
    const res = await t.get(`/api/jobs?projectId=none-such`);
    expect(await res.json()).toEqual([]);
    expect(res.headers.get('x-next-cursor')).toBeNull();
  });

  it('refuses a bad filter: an unknown state, a time without a zone, a made-up cursor, a malformed project id', async () => {
    for (const [query, status, loc] of [
      ['state=finished', 422, ['query', 'state']],
      ['from=2026-01-01T00:00:00', 422, ['query', 'from']],
      ['to=yesterday', 422, ['query', 'to']],
      ['cursor=not-a-cursor', 422, ['query', 'cursor']],
      [`cursor=${Buffer.from('["x","../etc"]').toString('base64url')}`, 422, ['query', 'cursor']],
      ['limit=501', 422, ['query', 'limit']],
    ] as const) {
      const res = await t.get(`/api/jobs?${query}`);
      expect(res.status, query).toBe(status);
      const body = (await res.json()) as { detail: { loc: string[] }[] };
      expect(
        body.detail.map((d) => d.loc),
        query,
      ).toContainEqual(loc);
    }
    const bad = await t.get('/api/jobs?projectId=..%2Fx');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { code: string }).code).toBe('invalid_id');
  });
});
