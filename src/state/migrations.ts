/**
 * Schema migrations of the state database, applied in order; `PRAGMA user_version` holds
 * how many have run. Never edit a shipped migration: append a new one.
 */
export const MIGRATIONS: readonly string[] = [
  // 1: events, the id reservation, jobs and proposals (issue: core slice).
  `
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
  `,
  // 2: the console's recorded state (issue: console state): every decision, take action and
  // memory toggle as a log, the current take states and toggles, fallback counts, clicks,
  // workspace blobs and reports, selections and recent items.
  `
  CREATE TABLE decisions (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT,
    proposal_id        TEXT NOT NULL,
    decision           TEXT NOT NULL,
    kind               TEXT,
    label              TEXT NOT NULL,
    was_pending        INTEGER NOT NULL,
    deferred_execution INTEGER NOT NULL,
    severity           TEXT NOT NULL,
    scope              TEXT NOT NULL,
    extra              TEXT NOT NULL,
    decided_at         TEXT NOT NULL
  ) STRICT;
  CREATE INDEX decisions_proposal ON decisions (proposal_id, id);

  CREATE TABLE take_actions (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    take_id    TEXT NOT NULL,
    action     TEXT NOT NULL,
    severity   TEXT NOT NULL,
    on_disk    INTEGER NOT NULL,
    scope      TEXT NOT NULL,
    extra      TEXT NOT NULL,
    acted_at   TEXT NOT NULL
  ) STRICT;
  CREATE INDEX take_actions_take ON take_actions (project_id, take_id, id);

  CREATE TABLE take_states (
    project_id TEXT NOT NULL,
    take_id    TEXT NOT NULL,
    shot_id    TEXT,
    is_primary INTEGER NOT NULL DEFAULT 0,
    circled    INTEGER NOT NULL DEFAULT 0,
    rejected   INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (project_id, take_id)
  ) STRICT;
  -- The database itself keeps primary unique per shot.
  CREATE UNIQUE INDEX take_states_one_primary ON take_states (project_id, shot_id) WHERE is_primary = 1;

  CREATE TABLE memory_toggles (
    entry_id   TEXT PRIMARY KEY,
    enabled    INTEGER NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE TABLE memory_toggle_log (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    entry_id   TEXT NOT NULL,
    enabled    INTEGER NOT NULL,
    scope      TEXT NOT NULL,
    extra      TEXT NOT NULL,
    toggled_at TEXT NOT NULL
  ) STRICT;

  CREATE TABLE fallback_counts (
    name    TEXT PRIMARY KEY,
    count   INTEGER NOT NULL,
    last_at TEXT NOT NULL
  ) STRICT;

  CREATE TABLE clicks (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    project_id TEXT NOT NULL,
    target     TEXT NOT NULL,
    x          REAL,
    y          REAL,
    meta       TEXT,
    clicked_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX clicks_project ON clicks (project_id, id);

  CREATE TABLE workspace_states (
    wid        TEXT PRIMARY KEY,
    revision   INTEGER NOT NULL,
    state      TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  CREATE TABLE workspace_reports (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    wid         TEXT NOT NULL,
    reason      TEXT,
    blob        TEXT NOT NULL,
    bytes       INTEGER NOT NULL,
    received_at TEXT NOT NULL
  ) STRICT;
  CREATE INDEX workspace_reports_wid ON workspace_reports (wid, id);

  CREATE TABLE selections (
    project_id TEXT PRIMARY KEY,
    selection  TEXT NOT NULL,
    updated_at TEXT NOT NULL
  ) STRICT;
  -- kind is 'project' (item_id = project_id) or the kind of a selected item; seq orders them.
  CREATE TABLE recent_items (
    project_id TEXT NOT NULL,
    kind       TEXT NOT NULL,
    item_id    TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    opened_at  TEXT NOT NULL,
    PRIMARY KEY (project_id, kind, item_id)
  ) STRICT;
  CREATE INDEX recent_items_seq ON recent_items (seq);
  `,
  // 3: events live in segment tables (event_segment_<n>), so retention drops a whole segment
  // instead of deleting rows one by one; the view `events` keeps the old name for readers.
  `
  ALTER TABLE events RENAME TO event_segment_1;
  CREATE VIEW events AS SELECT id, severity, scope, data FROM event_segment_1;
  `,
  // 4: what cluster mode records (issue 13; shared/design/cluster.md), kept by both back ends of
  // the state store: the instance that runs each job (NULL: the one instance of a database made
  // before this migration), the instances with their heartbeats, and the terminals.
  `
  ALTER TABLE jobs ADD COLUMN instance_id TEXT;
  CREATE INDEX jobs_instance ON jobs (instance_id, state);

  CREATE TABLE instances (
    id           TEXT PRIMARY KEY,
    address      TEXT NOT NULL,
    version      TEXT NOT NULL,
    started_at   TEXT NOT NULL,
    heartbeat_at TEXT NOT NULL
  ) STRICT;

  -- One terminal per project, on the instance that started it.
  CREATE TABLE terminals (
    project_id  TEXT PRIMARY KEY,
    instance_id TEXT NOT NULL,
    pid         INTEGER,
    port        INTEGER NOT NULL,
    url         TEXT NOT NULL,
    state       TEXT NOT NULL,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    rc          INTEGER,
    signal      TEXT
  ) STRICT;
  CREATE INDEX terminals_instance ON terminals (instance_id, state);
  `,
  // 5: why a job ended (issue 14, item 2): exited, cancelled, shutdown, lost or spawn failed,
  // and what says more (the tool's last stderr line for a failure).
  `
  ALTER TABLE jobs ADD COLUMN exit_reason TEXT;
  ALTER TABLE jobs ADD COLUMN exit_detail TEXT;
  `,
  // 6: each instance's open event streams, written with its heartbeat (cluster.md, Operations).
  `
  ALTER TABLE instances ADD COLUMN stream_clients INTEGER NOT NULL DEFAULT 0;
  `,
  // 7: as on PostgreSQL (cluster.md, "Under faults"): a version per take state and memory
  // toggle (a mirror takes a row only when it is newer than its own), an epoch per instance.
  `
  ALTER TABLE take_states ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE memory_toggles ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE instances ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;
  `,
  // 8: a terminal's HTTP credential (`user:password`), handed out by the authenticated API of
  // any instance when CONSOLE_API_TOKEN is set (src/terminals).
  `
  ALTER TABLE terminals ADD COLUMN credential TEXT;
  `,
];
