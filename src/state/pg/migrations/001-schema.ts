/**
 * Migration 1: every table of the SQLite state database (its migrations 1 to 4), and the
 * cluster's.
 */
export default `
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
  `;
