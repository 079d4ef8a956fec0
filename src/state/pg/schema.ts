/**
 * The PostgreSQL schema of the state store (issue 13, item 3; shared/design/cluster.md) and its
 * migrations, applied at start-up under an advisory lock.
 *
 * The tables are those of the SQLite database (src/state/migrations.ts), with PostgreSQL's
 * types, plus what the cluster needs:
 * - `event_sequencer`: one row holding the last event id. The transaction that stores events
 *   takes its next ids with `UPDATE … RETURNING`, which locks the row until that transaction
 *   ends: writers of events are serialised there, so ids are assigned in commit order and a
 *   reader that has seen id N has seen every smaller id. A rolled-back transaction rolls its
 *   ids back too: ids have no gaps.
 * - `events`: one table (retention deletes the oldest ids in ranges, see event-repo.ts).
 * - `counters`: the number of stored clicks, kept in the append's transaction (its row lock
 *   also serialises click appends, so the ring and the total bound hold across instances).
 * - `recent_seq`: a sequence ordering recent items (`max(seq) + 1` races between instances).
 * - `seq` columns on jobs and proposals: insertion order, for SQLite's `rowid` tie-break.
 * - `instances` and `terminals`; `jobs.instance_id`.
 * - `events.proposal_id` (migration 2), the column the `proposal` filter reads.
 * JSON values are stored as text, exactly as on SQLite. Booleans are booleans. Text that is
 * ordered or compared (times, the ids listed in order) is `COLLATE "C"`: byte order, as SQLite's.
 *
 * `console_schema` holds how many migrations ran. Never edit a shipped migration: append one.
 */
import type { PoolClient } from 'pg';
import { StateDbError } from '../errors.js';

export const PG_MIGRATIONS: readonly string[] = [
  // 1: every table of the SQLite state database (its migrations 1 to 4), and the cluster's.
  `
  CREATE TABLE event_sequencer (
    id      integer PRIMARY KEY CHECK (id = 1),
    last_id bigint NOT NULL
  );
  INSERT INTO event_sequencer (id, last_id) VALUES (1, 0);
  CREATE TABLE events (
    id       bigint PRIMARY KEY,
    severity text NOT NULL,
    scope    text NOT NULL,
    data     text NOT NULL
  );

  CREATE TABLE jobs (
    proposal_id      text PRIMARY KEY,
    seq              bigserial NOT NULL,
    instance_id      text NOT NULL,
    project_id       text NOT NULL,
    pid              integer,
    argv             text NOT NULL,
    state            text NOT NULL,
    started_at       text COLLATE "C" NOT NULL,
    ended_at         text,
    rc               integer,
    signal           text,
    stdout_lines     integer NOT NULL DEFAULT 0,
    stderr_lines     integer NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    exit_reason      text,
    exit_detail      text
  );
  CREATE INDEX jobs_state ON jobs (state);
  CREATE INDEX jobs_started ON jobs (started_at, seq);
  CREATE INDEX jobs_instance ON jobs (instance_id, state);

  CREATE TABLE proposals (
    id         text PRIMARY KEY,
    seq        bigserial NOT NULL,
    kind       text,
    title      text,
    payload    text NOT NULL DEFAULT '{}',
    status     text NOT NULL,
    created_at text COLLATE "C" NOT NULL,
    decided_at text,
    decision   text
  );
  CREATE INDEX proposals_status ON proposals (status, created_at);

  CREATE TABLE decisions (
    id                 bigserial PRIMARY KEY,
    proposal_id        text NOT NULL,
    decision           text NOT NULL,
    kind               text,
    label              text NOT NULL,
    was_pending        boolean NOT NULL,
    deferred_execution boolean NOT NULL,
    severity           text NOT NULL,
    scope              text NOT NULL,
    extra              text NOT NULL,
    decided_at         text NOT NULL
  );
  CREATE INDEX decisions_proposal ON decisions (proposal_id, id);

  CREATE TABLE take_actions (
    id         bigserial PRIMARY KEY,
    project_id text NOT NULL,
    take_id    text NOT NULL,
    action     text NOT NULL,
    severity   text NOT NULL,
    on_disk    boolean NOT NULL,
    scope      text NOT NULL,
    extra      text NOT NULL,
    acted_at   text NOT NULL
  );
  CREATE INDEX take_actions_take ON take_actions (project_id, take_id, id);

  CREATE TABLE take_states (
    project_id text NOT NULL,
    take_id    text NOT NULL,
    shot_id    text,
    is_primary boolean NOT NULL DEFAULT false,
    circled    boolean NOT NULL DEFAULT false,
    rejected   boolean NOT NULL DEFAULT false,
    updated_at text NOT NULL,
    PRIMARY KEY (project_id, take_id)
  );
  CREATE UNIQUE INDEX take_states_one_primary ON take_states (project_id, shot_id) WHERE is_primary;

  CREATE TABLE memory_toggles (
    entry_id   text PRIMARY KEY,
    enabled    boolean NOT NULL,
    updated_at text NOT NULL
  );
  CREATE TABLE memory_toggle_log (
    id         bigserial PRIMARY KEY,
    entry_id   text NOT NULL,
    enabled    boolean NOT NULL,
    scope      text NOT NULL,
    extra      text NOT NULL,
    toggled_at text NOT NULL
  );

  CREATE TABLE fallback_counts (
    name    text PRIMARY KEY,
    count   bigint NOT NULL,
    last_at text NOT NULL
  );

  CREATE TABLE clicks (
    id         bigserial PRIMARY KEY,
    project_id text NOT NULL,
    target     text NOT NULL,
    x          double precision,
    y          double precision,
    meta       text,
    clicked_at text NOT NULL
  );
  CREATE INDEX clicks_project ON clicks (project_id, id);
  CREATE TABLE counters (
    name text PRIMARY KEY,
    n    bigint NOT NULL
  );
  INSERT INTO counters (name, n) VALUES ('clicks', 0);

  CREATE TABLE workspace_states (
    wid        text PRIMARY KEY,
    revision   integer NOT NULL,
    state      text NOT NULL,
    updated_at text NOT NULL
  );
  CREATE TABLE workspace_reports (
    id          bigserial PRIMARY KEY,
    wid         text NOT NULL,
    reason      text,
    blob        text NOT NULL,
    bytes       integer NOT NULL,
    received_at text NOT NULL
  );
  CREATE INDEX workspace_reports_wid ON workspace_reports (wid, id);

  CREATE TABLE selections (
    project_id text PRIMARY KEY,
    selection  text NOT NULL,
    updated_at text NOT NULL
  );
  CREATE SEQUENCE recent_seq;
  CREATE TABLE recent_items (
    project_id text NOT NULL,
    kind       text NOT NULL,
    item_id    text NOT NULL,
    seq        bigint NOT NULL,
    opened_at  text NOT NULL,
    PRIMARY KEY (project_id, kind, item_id)
  );
  CREATE INDEX recent_items_seq ON recent_items (seq);

  CREATE TABLE instances (
    id           text COLLATE "C" PRIMARY KEY,
    address      text NOT NULL,
    version      text NOT NULL,
    started_at   text NOT NULL,
    heartbeat_at text COLLATE "C" NOT NULL
  );

  CREATE TABLE terminals (
    project_id  text COLLATE "C" PRIMARY KEY,
    instance_id text NOT NULL,
    pid         integer,
    port        integer NOT NULL,
    url         text NOT NULL,
    state       text NOT NULL,
    started_at  text NOT NULL,
    ended_at    text,
    rc          integer,
    signal      text
  );
  CREATE INDEX terminals_instance ON terminals (instance_id, state);
  `,
  // 2: the proposal each event is about, as on SQLite (issue 14, item 2: `?proposal=` filters);
  // the instances' stream counts.
  `
  ALTER TABLE events ADD COLUMN proposal_id text;
  CREATE INDEX events_proposal ON events (proposal_id, id) WHERE proposal_id IS NOT NULL;
  -- Each instance's open event streams, written with its heartbeat (cluster.md, Operations).
  ALTER TABLE instances ADD COLUMN stream_clients integer NOT NULL DEFAULT 0;
  `,
  // 3: faults (cluster.md, "Under faults"): events appended by one server-side function that
  // numbers them, applies the job states they commit with, and notifies, in one statement;
  // an epoch per instance for fencing; a version per mirrored row.
  `
  -- Bumped by whoever judges the instance dead, and at each start: a heartbeat under an older
  -- epoch finds no row, and the instance learns it was judged.
  ALTER TABLE instances ADD COLUMN epoch bigint NOT NULL DEFAULT 1;
  -- Mirrors (an instance's copy of the take states and toggles) take a row only when its
  -- version is newer than theirs: a refresh never moves them backwards.
  ALTER TABLE take_states ADD COLUMN version bigint NOT NULL DEFAULT 1;
  ALTER TABLE memory_toggles ADD COLUMN version bigint NOT NULL DEFAULT 1;
  -- Each event an instance's bus appends carries a token unique to it (its source, from this
  -- sequence at the bus's start, times 2^32, plus a count): an append that failed with its
  -- outcome unknown (the connection lost around the commit) is retried without storing twice.
  ALTER TABLE events ADD COLUMN token bigint;
  CREATE SEQUENCE event_source_seq;

  -- Appends events, one element of each array per event (the event's JSON without its id in
  -- p_body), and returns their ids, NULL for an event dropped by its guard.
  --
  -- The sequencer row is locked first, by every call, before any job row: appends never
  -- deadlock, and are serialised, so ids follow commit order. Called as the last statement of a
  -- transaction, with its COMMIT in the same round trip (or alone, autocommitted), it holds the
  -- sequencer only while the server works, never while waiting for a client.
  --
  -- p_guard names the job an event is about. Such an event is stored only while the job is
  -- recorded running (fencing: a job another instance marked lost gets nothing more). With
  -- p_end (a JSON final state), the job's state is written with the event, only over running;
  -- the job's later events in the same call are then dropped.
  --
  -- p_token: each event's token (or NULL). With p_retry_after (a retry of an append whose
  -- outcome is unknown, made when the log's ids were past it), an event whose token is stored
  -- already (with a greater id) is not stored again: its id is returned, its guard not applied.
  CREATE FUNCTION console_append(p_severity text[], p_scope text[], p_proposal text[], p_body text[], p_guard text[], p_end text[], p_token bigint[], p_retry_after bigint)
  RETURNS bigint[] LANGUAGE plpgsql AS $fn$
  DECLARE
    v_n integer := coalesce(array_length(p_body, 1), 0);
    v_last bigint;
    v_kept integer := 0;
    v_live text[];
    v_ids bigint[] := '{}';
    v_end json;
    v_done_tokens bigint[] := '{}';
    v_done_ids bigint[] := '{}';
    v_at integer;
  BEGIN
    SELECT last_id INTO v_last FROM event_sequencer WHERE id = 1 FOR UPDATE;
    IF p_retry_after IS NOT NULL THEN
      SELECT coalesce(array_agg(token), '{}'), coalesce(array_agg(id), '{}') INTO v_done_tokens, v_done_ids
        FROM events WHERE id > p_retry_after AND token = ANY (p_token);
    END IF;
    IF cardinality(v_done_tokens) > 0 OR EXISTS (SELECT 1 FROM unnest(p_guard) g WHERE g IS NOT NULL) THEN
      SELECT coalesce(array_agg(proposal_id), '{}') INTO v_live FROM jobs WHERE proposal_id = ANY (p_guard) AND state = 'running';
      FOR i IN 1 .. v_n LOOP
        v_at := array_position(v_done_tokens, p_token[i]);
        IF v_at IS NOT NULL THEN
          v_ids[i] := v_done_ids[v_at];
          CONTINUE;
        END IF;
        IF p_guard[i] IS NOT NULL AND NOT (p_guard[i] = ANY (v_live)) THEN
          v_ids[i] := NULL;
          CONTINUE;
        END IF;
        IF p_end[i] IS NOT NULL THEN
          v_end := p_end[i]::json;
          UPDATE jobs SET state = v_end->>'state', ended_at = v_end->>'endedAt', rc = (v_end->>'rc')::integer, signal = v_end->>'signal',
            stdout_lines = (v_end->>'stdoutLines')::integer, stderr_lines = (v_end->>'stderrLines')::integer,
            exit_reason = v_end->>'exitReason', exit_detail = v_end->>'exitDetail'
          WHERE proposal_id = p_guard[i] AND state = 'running';
          v_live := array_remove(v_live, p_guard[i]);
        END IF;
        v_kept := v_kept + 1;
        v_ids[i] := v_last + v_kept;
      END LOOP;
    ELSE
      v_kept := v_n;
      SELECT coalesce(array_agg(v_last + k ORDER BY k), '{}') INTO v_ids FROM generate_series(1, v_n) k;
    END IF;
    IF v_kept > 0 THEN
      UPDATE event_sequencer SET last_id = v_last + v_kept WHERE id = 1;
      INSERT INTO events (id, severity, scope, proposal_id, data, token)
        SELECT t.id, p_severity[t.i], p_scope[t.i], p_proposal[t.i], '{"id":"' || t.id || '",' || substr(p_body[t.i], 2), p_token[t.i]
        FROM unnest(v_ids) WITH ORDINALITY AS t(id, i) WHERE t.id > v_last;
      PERFORM pg_notify('console_events', (v_last + v_kept)::text);
    END IF;
    RETURN v_ids;
  END
  $fn$;
  `,
  // 4: reads filtered by scope prefix or severity use an index (event-repo.ts filterSql): the
  // database answers a filter matching few events, or none, without walking the log.
  `
  CREATE INDEX events_scope ON events (scope text_pattern_ops, id);
  CREATE INDEX events_severity ON events (severity, id);
  -- A terminal's HTTP credential, as on SQLite (migration 8).
  ALTER TABLE terminals ADD COLUMN credential text;
  `,
];

/** The schema version this code knows: the number of its migrations. */
export const PG_SCHEMA_VERSION = PG_MIGRATIONS.length;

/**
 * Key of the session-level advisory lock held while migrating (any fixed number; this one
 * spells "cons" in ASCII). Instances that start together queue on it: the first migrates,
 * the others then find nothing to do.
 */
const MIGRATION_LOCK = 0x636f6e73;

/**
 * Brings the schema to {@link PG_SCHEMA_VERSION} under the advisory lock, one transaction per
 * migration; the lock is released (and `client` left usable) whatever happens.
 * @param migrations the migrations to apply (tests pass their own); default {@link PG_MIGRATIONS}.
 * @returns the schema version now.
 * @throws StateDbError (`state_db_open_failed`) when the database's schema is newer than this
 *   code (naming both versions: an instance older than the schema refuses to start), or a
 *   migration failed (naming it, with the database's error as `cause`).
 */
export async function migrateSchema(client: PoolClient, migrations: readonly string[] = PG_MIGRATIONS): Promise<number> {
  // Instances starting together wait here for the first one's migrations, however long they
  // take; and a migration may run longer than a statement is allowed to (the pool's bounds).
  await client.query('SET lock_timeout = 0; SET statement_timeout = 0');
  await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
  try {
    await client.query('CREATE TABLE IF NOT EXISTS console_schema (id integer PRIMARY KEY CHECK (id = 1), version integer NOT NULL)');
    const rows = (await client.query<{ version: number }>('SELECT version FROM console_schema WHERE id = 1')).rows;
    const current = rows[0]?.version ?? 0;
    if (current > migrations.length) {
      throw new StateDbError(
        `the PostgreSQL state database has schema version ${current}, newer than this service's (${migrations.length}): ` +
          'an instance older than the schema refuses to start; run the newer version of the service',
      );
    }
    for (let v = current; v < migrations.length; v++) {
      try {
        await client.query('BEGIN');
        await client.query(migrations[v] as string);
        await client.query(
          'INSERT INTO console_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version',
          [v + 1],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw new StateDbError(`migration ${v + 1} of the PostgreSQL state database failed: ${(err as Error).message}`, { cause: err });
      }
    }
    return migrations.length;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]).catch(() => undefined);
    // Back to the pool's bounds (the connection's own settings) before the client is reused.
    await client.query('RESET lock_timeout; RESET statement_timeout').catch(() => undefined);
  }
}
