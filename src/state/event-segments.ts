/**
 * The schema of the event log's segment tables (`event_segment_<n>`, see event-log.ts): their
 * columns, the runs table that finds one proposal's events in a segment, creation, and the
 * upgrade of segments stored by earlier versions (issue 14, item 2; issue 11).
 *
 * Each segment `event_segment_<n>` has a runs table `event_segment_<n>_runs`: one row per
 * proposal and appended batch, the first and last id of that proposal's events in the batch
 * (a coarse index: other events may lie between them, and the reader filters rows by their
 * `proposal_id`). A partial index on `proposal_id` made every job line cost a second B-tree
 * insert: 41% more insert time in a micro-run of P3's rows, where the runs cost 13%
 * (bench/RESULTS.md). A reader scans, per row it returns, about as many rows as jobs ran at
 * once.
 */
import type { Db } from './db.js';

export const SEGMENT_PREFIX = 'event_segment_';

/** Columns of a segment, in insert order. */
export const COLUMNS = 'id, severity, scope, proposal_id, data';
/** The placeholders of one row of {@link COLUMNS}. */
export const ROW_PARAMS = '(?, ?, ?, ?, ?)';

/** The runs table of segment table `table`. */
export const runsOf = (table: string): string => `${table}_runs`;

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
 * The runs table: keyed by proposal and last id, so a reader after an id seeks to the first
 * run that ends past it, and runs come in id order (a proposal's runs never overlap: each
 * batch's ids are above the last one's).
 */
function runsTable(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${runsOf(table)} (proposal_id TEXT NOT NULL, last_id INTEGER NOT NULL, first_id INTEGER NOT NULL, PRIMARY KEY (proposal_id, last_id)) STRICT, WITHOUT ROWID`;
}

/** Numbers of the segment tables in the database, oldest first. */
export function segmentNumbers(db: Db): number[] {
  return (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '${SEGMENT_PREFIX}%'`).all() as { name: string }[])
    .map((r) => Number(r.name.slice(SEGMENT_PREFIX.length)))
    .filter((n) => Number.isInteger(n) && n > 0)
    .sort((a, b) => a - b);
}

/** Creates segment `n` (when absent) with its runs table. */
export function createSegmentTable(db: Db, n: number): void {
  const table = `${SEGMENT_PREFIX}${n}`;
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, severity TEXT NOT NULL, scope TEXT NOT NULL, data TEXT NOT NULL, proposal_id TEXT) STRICT;
     ${runsTable(table)}`,
  );
}

const exists = (db: Db, type: 'table' | 'index', name: string): boolean =>
  db.prepare(`SELECT 1 FROM sqlite_master WHERE type = ? AND name = ?`).get(type, name) !== undefined;

/**
 * Brings segments stored by earlier versions to the current shape, once, at start-up, in one
 * transaction (a no-op afterwards):
 * - before issue 14, no `proposal_id` column: added, and filled from the stored JSON;
 * - from issue 14 to issue 11's P3 work, a partial index on `proposal_id` and no runs table:
 *   the index is dropped.
 * Either way the runs table is created with one run per proposal over the segment's rows.
 * @throws the database's error (start-up stops, naming the state database).
 */
export function upgradeSegments(db: Db): void {
  const legacy = segmentNumbers(db)
    .map((n) => `${SEGMENT_PREFIX}${n}`)
    .filter((table) => !exists(db, 'table', runsOf(table)));
  if (legacy.length === 0) return;
  db.transaction(() => {
    for (const table of legacy) {
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[];
      if (!columns.some((c) => c.name === 'proposal_id')) {
        db.exec(`ALTER TABLE ${table} ADD COLUMN proposal_id TEXT; ${BACKFILL_PROPOSAL.replace('%T', table)}`);
      }
      db.exec(
        `${runsTable(table)};
         INSERT INTO ${runsOf(table)} (proposal_id, last_id, first_id)
           SELECT proposal_id, max(id), min(id) FROM ${table} WHERE proposal_id IS NOT NULL GROUP BY proposal_id;
         DROP INDEX IF EXISTS ${table}_proposal`,
      );
    }
  })();
}
