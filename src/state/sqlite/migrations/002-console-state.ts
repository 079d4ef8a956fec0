// Migration 2: the console's recorded state: decision, take action and toggle logs, current take states and
// toggles, fallback counts, clicks, workspace blobs and reports, selections and recent items.
export default `
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
  `;
