/**
 * Workspace blobs, selections and recent items, and clicks on PostgreSQL, as the SQLite repositories but
 * safe between instances: workspace writes are one conditional statement (the loser gets the 409), recent
 * items are ordered by a sequence (`max(seq) + 1` would compute alike), and click appends first move the
 * counter row, which serialises them so both bounds hold.
 */
import type { Exec } from './exec.js';
import type { ClickRecord, ClickStore, RecentRecord, SelectionStore, WorkspaceRecord, WorkspaceStore } from '../state-store.js';

interface WorkspaceRow {
  wid: string;
  revision: number;
  state: string;
  updated_at: string;
}

const workspaceFromRow = (r: WorkspaceRow): WorkspaceRecord => ({
  wid: r.wid,
  revision: r.revision,
  state: JSON.parse(r.state) as unknown,
  updatedAt: r.updated_at,
});

/** @param reportsKept newest reports kept per id. */
export function pgWorkspace(x: Exec, reportsKept: number): WorkspaceStore {
  const current = async (y: Exec, wid: string) => (await y.q<{ revision: number }>('SELECT revision FROM workspace_states WHERE wid = $1', [wid])).rows[0]?.revision ?? 0;
  return {
    reportsKept,
    get: async (wid) => {
      const r = (await x.q<WorkspaceRow>('SELECT * FROM workspace_states WHERE wid = $1', [wid])).rows[0];
      return r && workspaceFromRow(r);
    },
    put: (wid, expected, state, at) =>
      x.atomic(async (y) => {
        const json = JSON.stringify(state);
        const written =
          expected === 0
            ? await y.q<WorkspaceRow>('INSERT INTO workspace_states (wid, revision, state, updated_at) VALUES ($1, 1, $2, $3) ON CONFLICT (wid) DO NOTHING RETURNING *', [wid, json, at])
            : await y.q<WorkspaceRow>('UPDATE workspace_states SET revision = revision + 1, state = $1, updated_at = $2 WHERE wid = $3 AND revision = $4 RETURNING *', [json, at, wid, expected]);
        const row = written.rows[0];
        return row ? { ok: true as const, record: workspaceFromRow(row) } : { ok: false as const, currentRevision: await current(y, wid) };
      }),
    addReport: (wid, blobJson, reason, at) =>
      x.atomic(async (y) => {
        const { id } = (
          await y.q<{ id: number }>('INSERT INTO workspace_reports (wid, reason, blob, bytes, received_at) VALUES ($1, $2, $3, $4, $5) RETURNING id', [
            wid,
            reason,
            blobJson,
            Buffer.byteLength(blobJson),
            at,
          ])
        ).rows[0] as { id: number };
        await y.q(
          `DELETE FROM workspace_reports WHERE wid = $1 AND id <= (
             SELECT id FROM workspace_reports WHERE wid = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
          [wid, reportsKept],
        );
        return id;
      }),
    reports: async (wid, limit) =>
      (
        await x.q<{ id: number; wid: string; reason: string | null; blob: string; bytes: number; received_at: string }>('SELECT * FROM workspace_reports WHERE wid = $1 ORDER BY id DESC LIMIT $2', [
          wid,
          limit,
        ])
      ).rows.map((r) => ({ id: r.id, wid: r.wid, reason: r.reason, blob: JSON.parse(r.blob) as unknown, bytes: r.bytes, receivedAt: r.received_at })),
  };
}

interface RecentRow {
  project_id: string;
  kind: string;
  item_id: string;
  opened_at: string;
}

const recentFromRow = (r: RecentRow): RecentRecord => ({ projectId: r.project_id, kind: r.kind, itemId: r.item_id, openedAt: r.opened_at });

/** Selections and recent items on PostgreSQL. */
export function pgSelection(x: Exec): SelectionStore {
  const listOf = async (where: string, limit: number) =>
    (await x.q<RecentRow>(`SELECT project_id, kind, item_id, opened_at FROM recent_items WHERE ${where} ORDER BY seq DESC LIMIT $1`, [limit])).rows.map(recentFromRow);
  return {
    get: async (projectId) => {
      const r = (await x.q<{ selection: string; updated_at: string }>('SELECT selection, updated_at FROM selections WHERE project_id = $1', [projectId])).rows[0];
      return r && { projectId, selection: JSON.parse(r.selection) as Record<string, unknown>, updatedAt: r.updated_at };
    },
    put: async (s) => {
      await x.q(
        `INSERT INTO selections (project_id, selection, updated_at) VALUES ($1, $2, $3)
         ON CONFLICT (project_id) DO UPDATE SET selection = excluded.selection, updated_at = excluded.updated_at`,
        [s.projectId, JSON.stringify(s.selection), s.updatedAt],
      );
    },
    touch: (r, keep) =>
      x.atomic(async (y) => {
        await y.q(
          `INSERT INTO recent_items (project_id, kind, item_id, seq, opened_at) VALUES ($1, $2, $3, nextval('recent_seq'), $4)
           ON CONFLICT (project_id, kind, item_id) DO UPDATE SET seq = excluded.seq, opened_at = excluded.opened_at`,
          [r.projectId, r.kind, r.itemId, r.openedAt],
        );
        const where = r.kind === 'project' ? `kind = 'project'` : `kind <> 'project'`;
        await y.q(
          `DELETE FROM recent_items WHERE ${where} AND seq <= (
             SELECT seq FROM recent_items WHERE ${where} ORDER BY seq DESC LIMIT 1 OFFSET $1)`,
          [keep],
        );
      }),
    recent: async (limit) => ({ projects: await listOf(`kind = 'project'`, limit), items: await listOf(`kind <> 'project'`, limit) }),
  };
}

interface ClickRow {
  id: number;
  project_id: string;
  target: string;
  x: number | null;
  y: number | null;
  meta: string | null;
  clicked_at: string;
}

const clickFromRow = (r: ClickRow): ClickRecord => ({
  id: r.id,
  projectId: r.project_id,
  target: r.target,
  x: r.x,
  y: r.y,
  meta: r.meta === null ? null : (JSON.parse(r.meta) as Record<string, unknown>),
  clickedAt: r.clicked_at,
});

/**
 * Clicks on PostgreSQL. Call {@link trimClicks} once at start-up (the bound may have been lowered).
 * @throws RangeError for a bound that is not a positive integer.
 */
export function pgClicks(x: Exec, ringSize: number, maxTotal: number): ClickStore {
  for (const [name, v] of [
    ['ringSize', ringSize],
    ['maxTotal', maxTotal],
  ] as const) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${name} must be a positive integer, got ${v}`);
  }
  return {
    ringSize,
    maxTotal,
    append: (c) =>
      x.atomic(async (y) => {
        // First: the counter row's lock orders this append after every other one.
        const total = (await y.q<{ n: number }>(`UPDATE counters SET n = n + 1 WHERE name = 'clicks' RETURNING n`)).rows[0]?.n ?? 1;
        const row = (
          await y.q<ClickRow>('INSERT INTO clicks (project_id, target, x, y, meta, clicked_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING *', [
            c.projectId,
            c.target,
            c.x,
            c.y,
            c.meta === null ? null : JSON.stringify(c.meta),
            c.clickedAt,
          ])
        ).rows[0] as ClickRow;
        const evicted =
          (
            await y.q(
              `DELETE FROM clicks WHERE project_id = $1 AND id <= (
                 SELECT id FROM clicks WHERE project_id = $1 ORDER BY id DESC LIMIT 1 OFFSET $2)`,
              [c.projectId, ringSize],
            )
          ).rowCount ?? 0;
        const over = total - evicted - maxTotal;
        const trimmed = over > 0 ? ((await y.q('DELETE FROM clicks WHERE id IN (SELECT id FROM clicks ORDER BY id LIMIT $1)', [over])).rowCount ?? 0) : 0;
        if (evicted + trimmed > 0) await y.q(`UPDATE counters SET n = n - $1 WHERE name = 'clicks'`, [evicted + trimmed]);
        return clickFromRow(row);
      }),
    list: async (projectId, limit) =>
      (projectId === null
        ? (await x.q<ClickRow>('SELECT * FROM clicks ORDER BY id DESC LIMIT $1', [limit])).rows
        : (await x.q<ClickRow>('SELECT * FROM clicks WHERE project_id = $1 ORDER BY id DESC LIMIT $2', [projectId, limit])).rows
      ).map(clickFromRow),
    size: async () => (await x.q<{ n: number }>(`SELECT n FROM counters WHERE name = 'clicks'`)).rows[0]?.n ?? 0,
  };
}

/** Trims stored clicks to `maxTotal`, oldest first (a lowered bound), in one transaction. */
export function trimClicks(x: Exec, maxTotal: number): Promise<number> {
  return x.atomic(async (y) => {
    const total = (await y.q<{ n: number }>(`SELECT n FROM counters WHERE name = 'clicks' FOR UPDATE`)).rows[0]?.n ?? 0;
    if (total <= maxTotal) return 0;
    const trimmed = (await y.q('DELETE FROM clicks WHERE id IN (SELECT id FROM clicks ORDER BY id LIMIT $1)', [total - maxTotal])).rowCount ?? 0;
    await y.q(`UPDATE counters SET n = n - $1 WHERE name = 'clicks'`, [trimmed]);
    return trimmed;
  });
}
