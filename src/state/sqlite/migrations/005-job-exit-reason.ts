/**
 * Migration 5: why a job ended (issue 14, item 2): exited, cancelled, shutdown, lost or spawn
 * failed, and what says more (the tool's last stderr line for a failure).
 */
export default `
  ALTER TABLE jobs ADD COLUMN exit_reason TEXT;
  ALTER TABLE jobs ADD COLUMN exit_detail TEXT;
  `;
