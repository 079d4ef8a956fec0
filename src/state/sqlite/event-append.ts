/**
 * One append to the event log as its transaction writes it (event-log.ts decides it, this executes it): the id
 * reservation, new segments, each row in its segment with its job end (event.ts JobGuard), the runs, retention.
 * The same code runs on the main connection (appends inside a console write's transaction) and on the event
 * writer thread (event-writer-task.ts), which receives the plan and the rows as plain data.
 */
import type { Statement } from './binding.js';
import type { Db } from './db.js';
import type { JobEnd, JobStart, Severity } from '../../bus/event.js';
import type { EventRow } from '../../bus/local-event-log.js';
import { COLUMNS, createSegmentTable, INSERT_CHUNK, ROW_PARAMS } from './event-segments.js';
import { JobOwnersRepo } from './job-owners-repo.js';
import { JobsRepo } from './jobs-repo.js';
import { ProposalsRepo } from './proposals-repo.js';

/** What one append writes, as decided by the event log from the segments it holds (all plain data). */
export interface AppendPlan {
  /** `event_id_reserved` to store with the rows, or null when the stored one stands. */
  readonly reservation: number | null;
  /** Segment numbers to create, oldest first, before any insert. */
  readonly create: readonly number[];
  /** The rows `[from, to)` go into segment `table` (with its runs table `runs`). */
  readonly parts: readonly { readonly table: string; readonly runs: string; readonly from: number; readonly to: number }[];
  /** Segment tables (with their runs tables) dropped by retention, after the inserts. */
  readonly drop: readonly string[];
  /** The oldest segment's rows beyond the bound, deleted by row (after a restart under a smaller one): all but the newest `keep` of every segment. */
  readonly trim: { readonly table: string; readonly runs: string; readonly offset: number } | null;
  /** The segment tables the `events` view unites, when it changes. */
  readonly view: readonly string[] | null;
}

/** Rows of one append as columns (event-log.ts; on the event writer thread, append-wire.ts unpackRows): `ends` holds the job ends of the rows that have one. */
export interface AppendRows {
  readonly ids: Float64Array;
  readonly severities: Severity[];
  readonly scopes: string[];
  readonly proposals: (string | null)[];
  readonly data: string[];
  readonly ends: { readonly i: number; readonly job: string; readonly end: JobEnd }[];
  /** The job starts riding on rows (their spawn events), written before the rows and the ends. */
  readonly starts: JobStart[];
}

/** What an append did beyond the plan: rows dropped by their job end (indexes, ascending), and the trim's cutoff. */
export interface AppendOutcome {
  readonly dropped: readonly number[];
  /** The newest id the trim deleted and how many rows it deleted; null when it did not run. */
  readonly trimmed: { readonly cutoff: number; readonly removed: number } | null;
}

/** The rows as columns ({@link AppendRows}), each with its whole JSON. */
export function rowColumns(rows: readonly EventRow[]): AppendRows {
  const n = rows.length;
  const out: AppendRows = { ids: new Float64Array(n), severities: new Array(n), scopes: new Array(n), proposals: new Array(n), data: new Array(n), ends: [], starts: [] };
  for (let i = 0; i < n; i++) {
    const r = rows[i] as EventRow;
    out.ids[i] = r.id;
    out.severities[i] = r.severity;
    out.scopes[i] = r.scope;
    out.proposals[i] = r.proposalId ?? null;
    out.data[i] = r.data;
    const g = r.guard;
    if (g === undefined) continue;
    if (g.start !== undefined) out.starts.push(g.start);
    if (g.end !== undefined) out.ends.push({ i, job: g.job, end: g.end });
  }
  return out;
}

interface TableStatements {
  readonly one: Statement<unknown[]>;
  readonly chunk: Statement<unknown[]>;
  readonly run: Statement<unknown[]>;
}

/** Statements kept per segment table: a few more than a log holds (event-log.ts). */
const MAX_TABLES = 16;

/** Executes {@link AppendPlan}s on one connection (see the module's comment). */
export class AppendExecutor {
  private readonly tables = new Map<string, TableStatements>();
  private readonly saveReservation;
  private readonly finishJob;
  private readonly tx;
  /** Made at the first job start written here. */
  private startRepos: { readonly jobs: JobsRepo; readonly owners: JobOwnersRepo; readonly proposals: ProposalsRepo } | null = null;

  constructor(private readonly db: Db) {
    this.saveReservation = db.prepare(`INSERT INTO meta (key, value) VALUES ('event_id_reserved', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`);
    this.finishJob = db.prepare(
      `UPDATE jobs SET state = ?, ended_at = ?, rc = ?, signal = ?, stdout_lines = ?, stderr_lines = ?, exit_reason = ?, exit_detail = ?
       WHERE proposal_id = ? AND state = 'running'`,
    );
    this.tx = db.transaction((plan: AppendPlan, rows: AppendRows): AppendOutcome => this.write(plan, rows));
  }

  /** Runs `plan` over `rows` in one transaction (a savepoint inside the caller's). @throws the database's error (nothing written). */
  run(plan: AppendPlan, rows: AppendRows): AppendOutcome {
    return this.tx(plan, rows);
  }

  /** Forgets the statements (their tables may have been dropped, or recreated, by a rolled-back transaction). */
  forget(): void {
    this.tables.clear();
  }

  private write(plan: AppendPlan, rows: AppendRows): AppendOutcome {
    if (plan.reservation !== null) this.saveReservation.run(String(plan.reservation));
    // Before the ends: a job may start and end within one append. A refused insert fails the append (bus.ts refuses the start).
    for (const start of rows.starts) this.start(start);
    const dropped: number[] = [];
    for (const { i, job, end: e } of rows.ends) {
      if (this.finishJob.run(e.state, e.endedAt, e.rc, e.signal, e.stdoutLines, e.stderrLines, e.exitReason, e.exitDetail, job).changes === 0) dropped.push(i);
    }
    for (const n of plan.create) createSegmentTable(this.db, n);
    for (const part of plan.parts) this.insert(part.table, rows, part.from, part.to, dropped);
    let trimmed: AppendOutcome['trimmed'] = null;
    if (plan.drop.length > 0) {
      this.db.exec('DROP VIEW IF EXISTS events');
      for (const table of plan.drop) {
        this.db.exec(`DROP TABLE ${table}; DROP TABLE IF EXISTS ${table}_runs`);
        this.tables.delete(table);
      }
    }
    if (plan.trim !== null) {
      const t = plan.trim;
      const cutoff = this.db.prepare(`SELECT id FROM ${t.table} ORDER BY id LIMIT 1 OFFSET ?`).get(t.offset) as { id: number } | undefined;
      if (cutoff) {
        const removed = this.db.prepare(`DELETE FROM ${t.table} WHERE id <= ?`).run(cutoff.id).changes;
        this.db.prepare(`DELETE FROM ${t.runs} WHERE last_id <= ?`).run(cutoff.id);
        trimmed = { cutoff: cutoff.id, removed };
      }
    }
    if (plan.view !== null) {
      const union = plan.view.map((table) => `SELECT ${COLUMNS} FROM ${table}`).join(' UNION ALL ');
      this.db.exec(`DROP VIEW IF EXISTS events; CREATE VIEW events AS ${union}`);
    }
    return { dropped, trimmed };
  }

  /** The job `running` with its owner, and its pending proposal (as state-store.ts writeJobStart writes them). */
  private start({ job, proposal }: JobStart): void {
    this.startRepos ??= { jobs: new JobsRepo(this.db), owners: new JobOwnersRepo(this.db, job.instanceId), proposals: new ProposalsRepo(this.db) };
    const { jobs, owners, proposals } = this.startRepos;
    jobs.insert({ ...job, argv: [...job.argv], state: 'running' });
    owners.set(job.proposalId, job.instanceId);
    proposals.insertPending(proposal);
  }

  private statements(table: string, runs: string): TableStatements {
    let s = this.tables.get(table);
    if (s === undefined) {
      if (this.tables.size >= MAX_TABLES) this.tables.clear();
      s = {
        one: this.db.prepare(`INSERT INTO ${table} (${COLUMNS}) VALUES ${ROW_PARAMS}`),
        chunk: this.db.prepare(`INSERT INTO ${table} (${COLUMNS}) VALUES ${Array(INSERT_CHUNK).fill(ROW_PARAMS).join(', ')}`),
        run: this.db.prepare(`INSERT INTO ${runs} (proposal_id, last_id, first_id) VALUES (?, ?, ?)`),
      };
      this.tables.set(table, s);
    }
    return s;
  }

  /** Inserts rows `[from, to)` but the `dropped` ones, chunked, then their runs: each stretch of consecutive rows about one proposal. */
  private insert(table: string, rows: AppendRows, from: number, to: number, dropped: readonly number[]): void {
    const s = this.statements(table, `${table}_runs`);
    const args: (string | number)[] = new Array(INSERT_CHUNK * 4);
    let filled = 0;
    let d = 0;
    while (d < dropped.length && (dropped[d] as number) < from) d++;
    let proposal: string | null = null;
    let first = 0;
    let last = 0;
    for (let i = from; i < to; i++) {
      if (d < dropped.length && dropped[d] === i) {
        d++;
        continue;
      }
      const id = rows.ids[i] as number;
      args[filled * 4] = id;
      args[filled * 4 + 1] = rows.severities[i] as string;
      args[filled * 4 + 2] = rows.scopes[i] as string;
      args[filled * 4 + 3] = rows.data[i] as string;
      if (++filled === INSERT_CHUNK) {
        s.chunk.run(args);
        filled = 0;
      }
      const p = rows.proposals[i] ?? null;
      if (p !== proposal) {
        if (proposal !== null) s.run.run(proposal, last, first);
        proposal = p;
        first = id;
      }
      last = id;
    }
    for (let k = 0; k < filled; k++) s.one.run(args[k * 4], args[k * 4 + 1], args[k * 4 + 2], args[k * 4 + 3]);
    if (proposal !== null) s.run.run(proposal, last, first);
  }
}
