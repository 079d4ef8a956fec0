// Migration 4: what cluster mode records (cluster.md), for both back ends: each job's instance (NULL: the
// database's one instance before this), the instances with their heartbeats, and the terminals.
export default `
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
  `;
