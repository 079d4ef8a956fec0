/**
 * The schema of the event log's segment tables (`event_segment_<n>`, see event-log.ts): their
 * columns, creation with the proposal index, and the upgrade of segments stored before the
 * `proposal_id` column existed (issue 14, item 2).
 */
import type { Db } from './db.js';

export const SEGMENT_PREFIX = 'event_segment_';

/** Columns of a segment, in insert order. */
export const COLUMNS = 'id, severity, scope, proposal_id, data';
/** The placeholders of one row of {@link COLUMNS}. */
export const ROW_PARAMS = '(?, ?, ?, ?, ?)';

/**
 * Fills `proposal_id` of rows stored before the column existed: the payload's `proposal_id`,
 * or for a job's line event (payload `{ source: "dispatch_cli" }`) the first word of its
 * `detail` (`<proposal id> stdout line <n>`), the only place such events named their job.
 */
const BACKFILL_PROPOSAL = `
  UPDATE %T SET proposal_id = CASE
    WHEN json_type(data, '$.payload.proposal_id') = 'text' THEN json_extract(data, '$.payload.proposal_id')
    WHEN scope = 'engine/generation' AND json_extract(data, '$.payload.source') = 'dispatch_cli'
      AND instr(json_extract(data, '$.detail'), ' ') > 1
      THEN substr(json_extract(data, '$.detail'), 1, instr(json_extract(data, '$.detail'), ' ') - 1)
  END
  WHERE json_valid(data)`;

/**
 * The index of a segment's events by proposal; its entries end with the rowid (the event id),
 * so one proposal's events are read in id order from it. Partial: events about no proposal
 * (most, besides job lines) cost nothing to index.
 */
function proposalIndex(table: string): string {
  return `CREATE INDEX IF NOT EXISTS ${table}_proposal ON ${table} (proposal_id) WHERE proposal_id IS NOT NULL`;
}

/** Numbers of the segment tables in the database, oldest first. */
export function segmentNumbers(db: Db): number[] {
  return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '${SEGMENT_PREFIX}%'`).all() as { name: string }[])
    .map((r) => Number(r.name.slice(SEGMENT_PREFIX.length)))
    .filter((n) => Number.isInteger(n) && n > 0)
    .sort((a, b) => a - b);
}

/** Creates segment `n` (when absent) with its index. */
export function createSegmentTable(db: Db, n: number): void {
  const table = `${SEGMENT_PREFIX}${n}`;
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, severity TEXT NOT NULL, scope TEXT NOT NULL, data TEXT NOT NULL, proposal_id TEXT) STRICT;
     ${proposalIndex(table)}`,
  );
}

/**
 * Gives segments stored before issue 14 their `proposal_id` column, filled from the stored
 * JSON, and its index: once, at start-up, in one transaction (a no-op afterwards).
 * @throws the database's error (start-up stops, naming the state database).
 */
export function upgradeSegments(db: Db): void {
  const legacy = segmentNumbers(db)
    .map((n) => `${SEGMENT_PREFIX}${n}`)
    .filter((table) => !(db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[]).some((c) => c.name === 'proposal_id'));
  if (legacy.length === 0) return;
  db.transaction(() => {
    for (const table of legacy) db.exec(`ALTER TABLE ${table} ADD COLUMN proposal_id TEXT; ${BACKFILL_PROPOSAL.replace('%T', table)}; ${proposalIndex(table)}`);
  })();
}
