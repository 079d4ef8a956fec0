/**
 * Proposals, decisions, fallback counts, memory toggles and take states on PostgreSQL, as the SQLite
 * repositories; races between instances are settled by the database (a conditional UPDATE claims a pending
 * proposal; a unique index keeps one primary take per shot).
 */
import type { Exec } from './exec.js';
import type { DecisionRecord, DecisionStore, FallbackStore, MemoryToggleStore, ProposalRecord, ProposalStore, TakeStateRecord, TakeStateStore } from '../state-store.js';

interface ProposalRow {
  id: string;
  kind: string | null;
  title: string | null;
  payload: string;
  status: string;
  created_at: string;
  decided_at: string | null;
}

const proposalFromRow = (r: ProposalRow): ProposalRecord => ({
  id: r.id,
  kind: r.kind,
  title: r.title,
  payload: JSON.parse(r.payload) as Record<string, unknown>,
  status: r.status,
  createdAt: r.created_at,
  decidedAt: r.decided_at,
});

/** Proposals on PostgreSQL. */
export function pgProposals(x: Exec): ProposalStore {
  const cols = 'id, kind, title, payload, status, created_at, decided_at';
  return {
    insertPending: async (p) => {
      await x.q(`INSERT INTO proposals (id, kind, title, payload, status, created_at) VALUES ($1, $2, $3, $4, 'pending', $5)`, [p.id, p.kind, p.title, JSON.stringify(p.payload), p.createdAt]);
    },
    get: async (id) => {
      const r = (await x.q<ProposalRow>(`SELECT ${cols} FROM proposals WHERE id = $1`, [id])).rows[0];
      return r && proposalFromRow(r);
    },
    markDecided: async (id, decision, at) => (await x.q(`UPDATE proposals SET status = $1, decision = $1, decided_at = $2 WHERE id = $3 AND status = 'pending'`, [decision, at, id])).rowCount === 1,
    list: async (status, limit) => {
      const rows =
        status === null
          ? (await x.q<ProposalRow>(`SELECT ${cols} FROM proposals ORDER BY created_at DESC, seq DESC LIMIT $1`, [limit])).rows
          : (await x.q<ProposalRow>(`SELECT ${cols} FROM proposals WHERE status = $1 ORDER BY created_at DESC, seq DESC LIMIT $2`, [status, limit])).rows;
      return rows.map(proposalFromRow);
    },
  };
}

interface DecisionRow {
  id: number;
  proposal_id: string;
  decision: string;
  kind: string | null;
  label: string;
  was_pending: boolean;
  deferred_execution: boolean;
  severity: string;
  scope: string;
  extra: string;
  decided_at: string;
}

/** The decision log on PostgreSQL. */
export function pgDecisions(x: Exec): DecisionStore {
  return {
    insert: async (d) => {
      const r = await x.q<{ id: number }>(
        `INSERT INTO decisions (proposal_id, decision, kind, label, was_pending, deferred_execution, severity, scope, extra, decided_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING id`,
        [d.proposalId, d.decision, d.kind, d.label, d.wasPending, d.deferredExecution, d.severity, d.scope, JSON.stringify(d.extra), d.decidedAt],
      );
      return (r.rows[0] as { id: number }).id;
    },
    listFor: async (proposalId) =>
      (await x.q<DecisionRow>('SELECT * FROM decisions WHERE proposal_id = $1 ORDER BY id', [proposalId])).rows.map(
        (r): DecisionRecord => ({
          id: r.id,
          proposalId: r.proposal_id,
          decision: r.decision,
          kind: r.kind,
          label: r.label,
          wasPending: r.was_pending,
          deferredExecution: r.deferred_execution,
          severity: r.severity,
          scope: r.scope,
          extra: JSON.parse(r.extra) as Record<string, unknown>,
          decidedAt: r.decided_at,
        }),
      ),
  };
}

/** Fallback counts on PostgreSQL. */
export function pgFallbacks(x: Exec): FallbackStore {
  return {
    increment: async (name, at) => {
      await x.q(
        `INSERT INTO fallback_counts (name, count, last_at) VALUES ($1, 1, $2)
         ON CONFLICT (name) DO UPDATE SET count = fallback_counts.count + 1, last_at = excluded.last_at`,
        [name, at],
      );
    },
    all: async () => new Map((await x.q<{ name: string; count: number }>('SELECT name, count FROM fallback_counts')).rows.map((r) => [r.name, r.count])),
  };
}

/** Memory toggles on PostgreSQL: the last per entry and the log, in one transaction. */
export function pgMemoryToggles(x: Exec): MemoryToggleStore {
  return {
    all: async () => new Map((await x.q<{ entry_id: string; enabled: boolean }>('SELECT entry_id, enabled FROM memory_toggles')).rows.map((r) => [r.entry_id, r.enabled])),
    list: async () =>
      (await x.q<{ entry_id: string; enabled: boolean; version: number }>('SELECT entry_id, enabled, version FROM memory_toggles')).rows.map((r) => ({
        entryId: r.entry_id,
        on: r.enabled,
        version: r.version,
      })),
    record: (t) =>
      x.atomic(async (y) => {
        const { version } = (
          await y.q<{ version: number }>(
            `INSERT INTO memory_toggles (entry_id, enabled, updated_at) VALUES ($1, $2, $3)
             ON CONFLICT (entry_id) DO UPDATE SET enabled = excluded.enabled, updated_at = excluded.updated_at, version = memory_toggles.version + 1
             RETURNING version`,
            [t.entryId, t.on, t.at],
          )
        ).rows[0] as { version: number };
        await y.q('INSERT INTO memory_toggle_log (entry_id, enabled, scope, extra, toggled_at) VALUES ($1, $2, $3, $4, $5)', [t.entryId, t.on, t.scope, JSON.stringify(t.extra), t.at]);
        return { entryId: t.entryId, on: t.on, version };
      }),
  };
}

interface TakeRow {
  project_id: string;
  take_id: string;
  shot_id: string | null;
  is_primary: boolean;
  circled: boolean;
  rejected: boolean;
  version: number;
}

const TAKE_COLS = 'project_id, take_id, shot_id, is_primary, circled, rejected, version';

const takeFromRow = (r: TakeRow): TakeStateRecord => ({
  projectId: r.project_id,
  takeId: r.take_id,
  shotId: r.shot_id,
  primary: r.is_primary,
  circled: r.circled,
  rejected: r.rejected,
  version: r.version,
});

/**
 * Take states and the action log on PostgreSQL. An action reads its take's row `FOR UPDATE`
 * (after recording a blank one when there is none, so that there is a row to lock), so two
 * instances acting on one take at once are serialised and the second reads what the first wrote;
 * marking primary first takes a transaction-scoped advisory lock on the shot, so two instances
 * marking two takes of one shot primary at once cannot both find no other primary (the unique
 * index would then refuse one).
 */
export function pgTakeStates(x: Exec): TakeStateStore {
  return {
    all: async () => (await x.q<TakeRow>(`SELECT ${TAKE_COLS} FROM take_states`)).rows.map(takeFromRow),
    lock: async (projectId, takeId, shotId, lockShot, at) => {
      // hashtextextended's 64 bits: two shots sharing a lock only wait for each other.
      if (lockShot && shotId !== null) await x.q(`SELECT pg_advisory_xact_lock(hashtextextended($1, 0))`, [JSON.stringify(['take-shot', projectId, shotId])]);
      await x.q(
        `INSERT INTO take_states (project_id, take_id, shot_id, is_primary, circled, rejected, updated_at) VALUES ($1, $2, $3, false, false, false, $4)
         ON CONFLICT (project_id, take_id) DO NOTHING`,
        [projectId, takeId, shotId, at],
      );
      return takeFromRow((await x.q<TakeRow>(`SELECT ${TAKE_COLS} FROM take_states WHERE project_id = $1 AND take_id = $2 FOR UPDATE`, [projectId, takeId])).rows[0] as TakeRow);
    },
    clearOtherPrimaries: async (projectId, shotId, keepTakeId, at) =>
      (
        await x.q<TakeRow>(
          `UPDATE take_states SET is_primary = false, updated_at = $1, version = version + 1
           WHERE project_id = $2 AND shot_id = $3 AND take_id <> $4 AND is_primary RETURNING ${TAKE_COLS}`,
          [at, projectId, shotId, keepTakeId],
        )
      ).rows.map(takeFromRow),
    // As on SQLite: a take keeps the shot it was first recorded with, unless marked primary.
    upsert: async (s, at) =>
      takeFromRow(
        (
          await x.q<TakeRow>(
            `INSERT INTO take_states (project_id, take_id, shot_id, is_primary, circled, rejected, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)
             ON CONFLICT (project_id, take_id) DO UPDATE SET
               shot_id = CASE WHEN $4 THEN coalesce(excluded.shot_id, take_states.shot_id) ELSE coalesce(take_states.shot_id, excluded.shot_id) END,
               is_primary = excluded.is_primary, circled = excluded.circled, rejected = excluded.rejected,
               updated_at = excluded.updated_at, version = take_states.version + 1
             RETURNING ${TAKE_COLS}`,
            [s.projectId, s.takeId, s.shotId, s.primary, s.circled, s.rejected, at],
          )
        ).rows[0] as TakeRow,
      ),
    logAction: async (a) => {
      await x.q(`INSERT INTO take_actions (project_id, take_id, action, severity, on_disk, scope, extra, acted_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
        a.projectId,
        a.takeId,
        a.action,
        a.severity,
        a.onDisk,
        a.scope,
        JSON.stringify(a.extra),
        a.actedAt,
      ]);
    },
  };
}
