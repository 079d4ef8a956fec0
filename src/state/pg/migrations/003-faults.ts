/**
 * Migration 3: faults (cluster.md, "Under faults"): events appended by one server-side function
 * that numbers them, applies the job states they commit with, and notifies, in one statement;
 * an epoch per instance for fencing; a version per mirrored row.
 */
export default `
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
  `;
