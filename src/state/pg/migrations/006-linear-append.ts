/**
 * Migration 6: `console_append` (migration 3) reads its arrays in one pass. PL/pgSQL's `a[i]` on a
 * text array walks it from the start (its elements have no fixed length), so the loop over guarded
 * rows and the INSERT that read `p_body[t.i]` cost the square of the batch (bench C1, batches of
 * about 1,300 job lines: its INSERT ran 36 µs a row, a plain `unnest` INSERT 11). Same arguments, same
 * answers, same locking order; only the reading changes: each array is unnested once, zipped with
 * the others by position.
 */
export default `
  CREATE OR REPLACE FUNCTION console_append(p_severity text[], p_scope text[], p_proposal text[], p_body text[], p_guard text[], p_end text[], p_token bigint[], p_retry_after bigint)
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
    r record;
  BEGIN
    SELECT last_id INTO v_last FROM event_sequencer WHERE id = 1 FOR UPDATE;
    IF p_retry_after IS NOT NULL THEN
      SELECT coalesce(array_agg(token), '{}'), coalesce(array_agg(id), '{}') INTO v_done_tokens, v_done_ids
        FROM events WHERE id > p_retry_after AND token = ANY (p_token);
    END IF;
    IF cardinality(v_done_tokens) > 0 OR EXISTS (SELECT 1 FROM unnest(p_guard) g WHERE g IS NOT NULL) THEN
      SELECT coalesce(array_agg(proposal_id), '{}') INTO v_live FROM jobs WHERE proposal_id = ANY (p_guard) AND state = 'running';
      -- One pass over the guards, ends and tokens (multi-argument unnest pads a NULL array with NULLs).
      FOR r IN SELECT u.guard, u.fin, u.token FROM unnest(p_guard, p_end, p_token) AS u(guard, fin, token) LOOP
        IF cardinality(v_done_tokens) > 0 THEN
          v_at := array_position(v_done_tokens, r.token);
          IF v_at IS NOT NULL THEN
            v_ids := v_ids || v_done_ids[v_at];
            CONTINUE;
          END IF;
        END IF;
        IF r.guard IS NOT NULL AND NOT (r.guard = ANY (v_live)) THEN
          v_ids := v_ids || NULL::bigint;
          CONTINUE;
        END IF;
        IF r.fin IS NOT NULL THEN
          v_end := r.fin::json;
          UPDATE jobs SET state = v_end->>'state', ended_at = v_end->>'endedAt', rc = (v_end->>'rc')::integer, signal = v_end->>'signal',
            stdout_lines = (v_end->>'stdoutLines')::integer, stderr_lines = (v_end->>'stderrLines')::integer,
            exit_reason = v_end->>'exitReason', exit_detail = v_end->>'exitDetail'
          WHERE proposal_id = r.guard AND state = 'running';
          v_live := array_remove(v_live, r.guard);
        END IF;
        v_kept := v_kept + 1;
        v_ids := v_ids || (v_last + v_kept);
      END LOOP;
    ELSE
      v_kept := v_n;
      SELECT coalesce(array_agg(v_last + k ORDER BY k), '{}') INTO v_ids FROM generate_series(1, v_n) k;
    END IF;
    IF v_kept > 0 THEN
      UPDATE event_sequencer SET last_id = v_last + v_kept WHERE id = 1;
      INSERT INTO events (id, severity, scope, proposal_id, data, token)
        SELECT u.id, u.severity, u.scope, u.proposal, '{"id":"' || u.id || '",' || substr(u.body, 2), u.token
        FROM unnest(v_ids, p_severity, p_scope, p_proposal, p_body, p_token) AS u(id, severity, scope, proposal, body, token)
        WHERE u.id > v_last;
      PERFORM pg_notify('console_events', (v_last + v_kept)::text);
    END IF;
    RETURN v_ids;
  END
  $fn$;
  `;
