/**
 * Migration 8: a terminal's HTTP credential (`user:password`), handed out by the authenticated
 * API of any instance when CONSOLE_API_TOKEN is set (src/terminals).
 */
export default `
  ALTER TABLE terminals ADD COLUMN credential TEXT;
  `;
