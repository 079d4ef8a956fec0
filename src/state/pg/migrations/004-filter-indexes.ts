/**
 * Migration 4: reads filtered by scope prefix or severity use an index (event-repo.ts
 * filterSql): the database answers a filter matching few events, or none, without walking the
 * log.
 */
export default `
  CREATE INDEX events_scope ON events (scope text_pattern_ops, id);
  CREATE INDEX events_severity ON events (severity, id);
  -- A terminal's HTTP credential, as on SQLite (migration 8).
  ALTER TABLE terminals ADD COLUMN credential text;
  `;
