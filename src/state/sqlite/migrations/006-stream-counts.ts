/**
 * Migration 6: each instance's open event streams, written with its heartbeat (cluster.md,
 * Operations).
 */
export default `
  ALTER TABLE instances ADD COLUMN stream_clients INTEGER NOT NULL DEFAULT 0;
  `;
