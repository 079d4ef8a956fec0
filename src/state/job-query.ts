// A query of the job history as both back ends answer it (`JobStore.search`): filters, newest first, paged by
// keyset, not offset, so a late page costs what page 1 does and a job started meanwhile shifts nothing.

/** Jobs matching every filter given, newest first (`startedAt`, then `proposalId`, descending). */
export interface JobQuery {
  /** `running`, `exited ok`, `exited failed`, `lost`; absent or empty: any. */
  readonly states?: readonly string[];
  /** Only the jobs of this project. */
  readonly projectId?: string;
  /** Only jobs started at or after this time (ISO-8601 UTC with milliseconds, as stored). */
  readonly from?: string;
  /** Exclusive. */
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

/** The WHERE clause and parameters in the dialect of `param`; on SQLite `+state`/`+project_id` keep the planner
 * on the `started_at` index, in answer order, stopping at the limit. */
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
