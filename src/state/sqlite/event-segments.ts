// The event log's segment tables (event-log.ts) and their runs tables: a run is a stretch of consecutive events
// about one proposal, so a job's events are found without a scan, at far less insert cost than an indexed column.
import type { Statement } from './binding.js';
import type { Db } from './db.js';
import type { Severity } from '../../bus/event.js';
import { EventPairs } from './event-pairs.js';

export const SEGMENT_PREFIX = 'event_segment_';

/** Columns of a segment, in insert order (older segments may have an unused `proposal_id` after them). */
export const COLUMNS = 'id, severity, scope, data';
/** The placeholders of one row of {@link COLUMNS}. */
export const ROW_PARAMS = '(?, ?, ?, ?)';

/** The runs table of segment table `table`. */
export const runsOf = (table: string): string => `${table}_runs`;

/** The proposal of an event stored without one, from its JSON: the payload's `proposal_id`, or for a job's
 * line event the first word of its `detail`, the only place such events name their job. */
const PROPOSAL_OF_JSON = `CASE WHEN NOT json_valid(data) THEN NULL
    WHEN json_type(data, '$.payload.proposal_id') = 'text' THEN json_extract(data, '$.payload.proposal_id')
    WHEN scope = 'engine/generation' AND json_extract(data, '$.payload.source') = 'dispatch_cli'
      AND instr(json_extract(data, '$.detail'), ' ') > 1
      THEN substr(json_extract(data, '$.detail'), 1, instr(json_extract(data, '$.detail'), ' ') - 1)
  END`;

/** The runs of segment `%T`'s rows, each row's proposal `p` given by `%P` (gaps and islands: consecutive rows
 * of one proposal share their rank overall minus their rank in the proposal). */
const RUNS_OF_ROWS = `
  INSERT INTO %R (proposal_id, last_id, first_id)
    SELECT p, max(id), min(id) FROM (
      SELECT id, p, row_number() OVER (ORDER BY id) - row_number() OVER (PARTITION BY p ORDER BY id) AS island
      FROM (SELECT id, %P AS p FROM %T))
    WHERE p IS NOT NULL GROUP BY p, island`;

/** Keyed by proposal and last id, so a reader after an id seeks to the first run ending past it, in id order. */
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
    `CREATE TABLE IF NOT EXISTS ${table} (id INTEGER PRIMARY KEY, severity TEXT NOT NULL, scope TEXT NOT NULL, data TEXT NOT NULL) STRICT;
     ${runsTable(table)}`,
  );
}

const tableExists = (db: Db, name: string): boolean => db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(name) !== undefined;

/**
 * Gives segments of older schemas their runs table, once, in one transaction: from their `proposal_id` column
 * (whose index is dropped) when they have one, else from their JSON.
 * @throws the database's error (start-up stops, naming the state database).
 */
export function upgradeSegments(db: Db): void {
  const legacy = segmentNumbers(db)
    .map((n) => `${SEGMENT_PREFIX}${n}`)
    .filter((table) => !tableExists(db, runsOf(table)));
  if (legacy.length === 0) return;
  db.transaction(() => {
    for (const table of legacy) {
      const columns = db.prepare(`SELECT name FROM pragma_table_info(?)`).all(table) as { name: string }[];
      const proposal = columns.some((c) => c.name === 'proposal_id') ? 'proposal_id' : PROPOSAL_OF_JSON;
      db.exec(
        `${runsTable(table)};
         ${RUNS_OF_ROWS.replace('%R', runsOf(table)).replace('%P', proposal).replace('%T', table)};
         DROP INDEX IF EXISTS ${table}_proposal`,
      );
    }
  })();
}

/** Rows per multi-row INSERT: fewer statement steps per event on the hot path. */
export const INSERT_CHUNK = 64;

/** One segment as the event log holds it: its bounds, its read statement, and its events' pairs (event-pairs.ts); appends write it (event-append.ts). */
export interface Segment {
  readonly n: number;
  readonly table: string;
  readonly runs: string;
  minId: number;
  maxId: number;
  count: number;
  pairs: EventPairs;
  readonly byIds: Statement<unknown[]>;
}

/** Opens segment `n`, whose tables exist: reads its bounds and pairs, prepares its statements. */
export function openSegment(db: Db, n: number): Segment {
  const table = `${SEGMENT_PREFIX}${n}`;
  const st = db.prepare(`SELECT min(id) AS lo, max(id) AS hi, count(*) AS c FROM ${table}`).get() as {
    lo: number | null;
    hi: number | null;
    c: number;
  };
  const runs = runsOf(table);
  return {
    n,
    table,
    runs,
    minId: st.lo ?? 0,
    maxId: st.hi ?? 0,
    count: st.c,
    pairs: pairsOf(db, table),
    byIds: db.prepare(`SELECT id, severity, scope, data FROM ${table} WHERE id IN (SELECT value FROM json_each(?)) ORDER BY id`),
  };
}

/** The pairs of a segment's stored rows, read once when the segment is opened (a scan of ids and two short columns). */
export function pairsOf(db: Db, table: string): EventPairs {
  const pairs = new EventPairs();
  for (const r of db.prepare(`SELECT id, severity, scope FROM ${table} ORDER BY id`).iterate() as Iterable<{ id: number; severity: Severity; scope: string }>) {
    pairs.note(r.id, r.severity, r.scope);
  }
  return pairs;
}

/** Creates segment `n`'s tables and opens it. */
export function createSegment(db: Db, n: number): Segment {
  createSegmentTable(db, n);
  return openSegment(db, n);
}
