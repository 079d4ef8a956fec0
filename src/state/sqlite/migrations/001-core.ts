// Migration 1: events, the id reservation, jobs and proposals.
export default `
  CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) STRICT;

  -- One row per bus event; data is the event's JSON exactly as served.
  CREATE TABLE events (
    id       INTEGER PRIMARY KEY,
    severity TEXT NOT NULL,
    scope    TEXT NOT NULL,
    data     TEXT NOT NULL
  ) STRICT;

  CREATE TABLE jobs (
    proposal_id      TEXT PRIMARY KEY,
    project_id       TEXT NOT NULL,
    pid              INTEGER,
    argv             TEXT NOT NULL,
    state            TEXT NOT NULL,
    started_at       TEXT NOT NULL,
    ended_at         TEXT,
    rc               INTEGER,
    signal           TEXT,
    stdout_lines     INTEGER NOT NULL DEFAULT 0,
    stderr_lines     INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0
  ) STRICT;
  CREATE INDEX jobs_state ON jobs (state);
  CREATE INDEX jobs_started ON jobs (started_at);

  CREATE TABLE proposals (
    id          TEXT PRIMARY KEY,
    kind        TEXT,
    title       TEXT,
    payload     TEXT NOT NULL DEFAULT '{}',
    status      TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    decided_at  TEXT,
    decision    TEXT
  ) STRICT;
  CREATE INDEX proposals_status ON proposals (status, created_at);
  `;
