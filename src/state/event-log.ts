/**
 * Persistence of bus events in the state database (api-decisions.md, Events): batched
 * inserts, reads in ascending id order with the list filters, a retention bound, and an
 * id reservation that keeps ids strictly increasing across restarts, crashes included.
 */
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';
import type { EventFilter, Severity } from '../bus/event.js';

/** One stored event: its numeric id, filter columns and the served JSON text. */
export interface EventRow {
  readonly id: number;
  readonly severity: Severity;
  readonly scope: string;
  readonly data: string;
}

/**
 * Ids are handed out from blocks reserved in `meta` before use, so an id seen by a live
 * client is never reused after a crash lost the unflushed tail (the price is a gap).
 */
const ID_BLOCK = 10_000;
/** Rows per multi-row INSERT: fewer statement steps per event on the hot path. */
const INSERT_CHUNK = 64;
/**
 * Retention deletes in batches: once the newest id is this many ids (at least) past the
 * bound, everything older than the newest `retention` ids goes in one range delete.
 */
const RETENTION_BATCH_MIN = 100;
const RETENTION_BATCH_FRACTION = 0.05;

export class EventLog {
  private nextId: number;
  private reservedUpTo: number;
  /** Newest id handed out (or stored, after a restart); ids in a lost reservation never count. */
  private lastId: number;
  private rowCount: number;
  private readonly insertOne;
  private readonly insertChunk;
  private readonly saveReservation;
  private readonly appendTx;
  private readonly deleteBefore;
  /** Events with a smaller id have been deleted by retention. */
  private retainedFrom: number;
  private readonly retentionBatch: number;
  private readonly selects = new Map<string, Statement<unknown[]>>();

  /**
   * @param retention number of newest events kept; older ones are deleted in batches.
   */
  constructor(
    private readonly db: Db,
    readonly retention: number,
  ) {
    const reserved = Number(
      (db.prepare(`SELECT value FROM meta WHERE key = 'event_id_reserved'`).get() as { value: string } | undefined)
        ?.value ?? 0,
    );
    const maxId = (db.prepare('SELECT max(id) AS m FROM events').get() as { m: number | null }).m ?? 0;
    this.reservedUpTo = Math.max(reserved, maxId);
    this.nextId = this.reservedUpTo + 1;
    this.lastId = maxId;
    this.rowCount = (db.prepare('SELECT count(*) AS c FROM events').get() as { c: number }).c;
    this.retainedFrom = (db.prepare('SELECT min(id) AS m FROM events').get() as { m: number | null }).m ?? 0;
    this.retentionBatch = Math.max(RETENTION_BATCH_MIN, Math.floor(retention * RETENTION_BATCH_FRACTION));
    this.deleteBefore = db.prepare('DELETE FROM events WHERE id < ?');
    this.insertOne = db.prepare('INSERT INTO events (id, severity, scope, data) VALUES (?, ?, ?, ?)');
    this.insertChunk = db.prepare(
      `INSERT INTO events (id, severity, scope, data) VALUES ${Array(INSERT_CHUNK).fill('(?, ?, ?, ?)').join(', ')}`,
    );
    this.saveReservation = db.prepare(
      `INSERT INTO meta (key, value) VALUES ('event_id_reserved', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
    this.appendTx = db.transaction((rows: readonly EventRow[]) => {
      let i = 0;
      const args: (string | number)[] = new Array(INSERT_CHUNK * 4);
      for (; i + INSERT_CHUNK <= rows.length; i += INSERT_CHUNK) {
        for (let j = 0; j < INSERT_CHUNK; j++) {
          const r = rows[i + j] as EventRow;
          args[j * 4] = r.id;
          args[j * 4 + 1] = r.severity;
          args[j * 4 + 2] = r.scope;
          args[j * 4 + 3] = r.data;
        }
        this.insertChunk.run(args);
      }
      for (; i < rows.length; i++) {
        const r = rows[i] as EventRow;
        this.insertOne.run(r.id, r.severity, r.scope, r.data);
      }
    });
  }

  /** Hands out the next event id (synchronous; reserves a new block in the database when needed). */
  takeId(): number {
    if (this.nextId > this.reservedUpTo) {
      this.reservedUpTo = this.nextId + ID_BLOCK - 1;
      this.saveReservation.run(String(this.reservedUpTo));
    }
    this.lastId = this.nextId++;
    return this.lastId;
  }

  /** The newest event id: the last handed out, or after a restart the newest stored (0 when none). */
  get lastIssuedId(): number {
    return this.lastId;
  }

  /** Number of stored rows (approximate between retention passes). */
  get size(): number {
    return this.rowCount;
  }

  /** Writes `rows` (ascending ids) in one transaction, then applies retention if due. */
  append(rows: readonly EventRow[]): void {
    if (rows.length === 0) return;
    this.appendTx(rows);
    this.rowCount += rows.length;
    const newest = (rows[rows.length - 1] as EventRow).id;
    if (newest - this.retention >= this.retainedFrom + this.retentionBatch) this.applyRetention(newest);
  }

  /**
   * Keeps the events of the newest `retention` ids: a range delete on the primary key, so its
   * cost is that of the rows deleted. Ids skipped by a crash count against the bound, so after
   * one slightly fewer rows than `retention` may be kept, never more.
   */
  private applyRetention(newest: number): void {
    const from = newest - this.retention + 1;
    this.rowCount -= this.deleteBefore.run(from).changes;
    this.retainedFrom = from;
  }

  /**
   * Events with `sinceId < id <= upTo` that pass `filter`, ascending, at most `limit`.
   * @returns rows with the served JSON text.
   */
  after(sinceId: number, limit: number, filter: EventFilter, upTo: number = Number.MAX_SAFE_INTEGER): EventRow[] {
    const { sql, args } = this.where(filter);
    const stmt = this.select(`after${sql}`, () =>
      `SELECT id, severity, scope, data FROM events WHERE id > ? AND id <= ?${sql} ORDER BY id ASC LIMIT ?`,
    );
    return stmt.all(sinceId, upTo, ...args, limit) as EventRow[];
  }

  /** The newest `limit` events that pass `filter`, in ascending id order. */
  newest(limit: number, filter: EventFilter): EventRow[] {
    const { sql, args } = this.where(filter);
    const stmt = this.select(`newest${sql}`, () =>
      `SELECT id, severity, scope, data FROM events WHERE 1${sql} ORDER BY id DESC LIMIT ?`,
    );
    return (stmt.all(...args, limit) as EventRow[]).reverse();
  }

  private where(filter: EventFilter): { sql: string; args: (string | number)[] } {
    let sql = '';
    const args: (string | number)[] = [];
    if (filter.severities !== null) {
      const sev = [...new Set(filter.severities)];
      sql += ` AND severity IN (${sev.map(() => '?').join(', ')})`;
      args.push(...sev);
    }
    if (filter.scopePrefix !== null) {
      // length() and substr() both count code points, so non-ASCII prefixes match exactly.
      sql += ' AND substr(scope, 1, length(?)) = ?';
      args.push(filter.scopePrefix, filter.scopePrefix);
    }
    return { sql, args };
  }

  private select(key: string, build: () => string): Statement<unknown[]> {
    let stmt = this.selects.get(key);
    if (!stmt) {
      stmt = this.db.prepare<unknown[]>(build());
      this.selects.set(key, stmt);
    }
    return stmt;
  }
}
