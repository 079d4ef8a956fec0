// Migration 2: the proposal each event is about, as on SQLite (for `?proposal=` filters); the instances' stream counts.
export default `
  ALTER TABLE events ADD COLUMN proposal_id text;
  CREATE INDEX events_proposal ON events (proposal_id, id) WHERE proposal_id IS NOT NULL;
  -- Each instance's open event streams, written with its heartbeat (cluster.md, Operations).
  ALTER TABLE instances ADD COLUMN stream_clients integer NOT NULL DEFAULT 0;
  `;
