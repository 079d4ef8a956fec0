/**
 * Migration 7: as on PostgreSQL (cluster.md, "Under faults"): a version per take state and
 * memory toggle (a mirror takes a row only when it is newer than its own), an epoch per
 * instance.
 */
export default `
  ALTER TABLE take_states ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE memory_toggles ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
  ALTER TABLE instances ADD COLUMN epoch INTEGER NOT NULL DEFAULT 1;
  `;
