/**
 * A query of the job history, as both back ends answer it (`JobStore.search`; the SQLite
 * repository in jobs-repo.ts, PostgreSQL's in pg/job-repos.ts): filters, newest first, and a
 * page that starts after the last job of the previous one (a keyset, not an offset: page 50 of
 * 10,000 jobs costs what page 1 does, and a job started meanwhile shifts nothing).
 */

/** Jobs matching every filter given, newest first (`startedAt`, then `proposalId`, descending). */
export interface JobQuery {
  /** Only jobs in one of these states (`running`, `exited ok`, `exited failed`, `lost`); absent or empty: any. */
  readonly states?: readonly string[];
  /** Only the jobs of this project. */
  readonly projectId?: string;
  /** Only jobs started at or after this time (ISO-8601 UTC with milliseconds, as stored). */
  readonly from?: string;
  /** Only jobs started before this time (ISO-8601 UTC with milliseconds). */
  readonly to?: string;
  /** The last job of the previous page: only jobs after it in the order (older, or as old with a smaller id). */
  readonly after?: JobPosition;
  /** Most jobs answered. */
  readonly limit: number;
}

/** Where a job is in the order of {@link JobQuery}. */
export interface JobPosition {
  readonly startedAt: string;
  readonly proposalId: string;
}

/**
 * The WHERE clause of a query and its parameters, in the dialect of `param` (SQLite's `?`,
 * PostgreSQL's `$n`). The state and project filters are written `+state`/`+project_id` on
 * SQLite so that its planner walks the `started_at` index in the order answered and stops at
 * the limit, instead of collecting every job in a state to sort them.
 */
export function jobQueryWhere(q: JobQuery, param: (value: unknown) => string, opts: { readonly unindexed: (column: string) => string; readonly byId: string }): string {
  const where: string[] = [];
  if (q.states !== undefined && q.states.length > 0) where.push(`${opts.unindexed('state')} IN (${q.states.map((s) => param(s)).join(', ')})`);
  if (q.projectId !== undefined) where.push(`${opts.unindexed('project_id')} = ${param(q.projectId)}`);
  if (q.from !== undefined) where.push(`started_at >= ${param(q.from)}`);
  if (q.to !== undefined) where.push(`started_at < ${param(q.to)}`);
  if (q.after !== undefined) {
    // The first term bounds the index range; the second breaks ties of one start time by id.
    where.push(`started_at <= ${param(q.after.startedAt)}`);
    where.push(`(started_at < ${param(q.after.startedAt)} OR ${opts.byId} < ${param(q.after.proposalId)})`);
  }
  return where.length === 0 ? '' : `WHERE ${where.join(' AND ')}`;
}
