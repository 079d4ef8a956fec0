// Migration 5: why a job ended (exited, cancelled, shutdown, lost, spawn failed) and the tool's last stderr line for a failure.
export default `
  ALTER TABLE jobs ADD COLUMN exit_reason TEXT;
  ALTER TABLE jobs ADD COLUMN exit_detail TEXT;
  `;
