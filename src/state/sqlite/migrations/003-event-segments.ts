/**
 * Migration 3: events live in segment tables (event_segment_<n>), so retention drops a whole
 * segment instead of deleting rows one by one; the view `events` keeps the old name for
 * readers.
 */
export default `
  ALTER TABLE events RENAME TO event_segment_1;
  CREATE VIEW events AS SELECT id, severity, scope, data FROM event_segment_1;
  `;
