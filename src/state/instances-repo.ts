/**
 * Instances of the service and their heartbeats in the SQLite state database (issue 13;
 * shared/design/cluster.md, Operations). A single-instance database holds at most its own.
 */
import type { Db } from './db.js';
import type { InstanceRecord } from './state-store.js';

interface Row {
  id: string;
  address: string;
  version: string;
  started_at: string;
  heartbeat_at: string;
  stream_clients: number;
}

/** A stored row as a record (shared with the PostgreSQL back end, whose rows are the same). */
export const instanceFromRow = (r: Row): InstanceRecord => ({
  id: r.id,
  address: r.address,
  version: r.version,
  startedAt: r.started_at,
  heartbeatAt: r.heartbeat_at,
  streamClients: Number(r.stream_clients),
});

export class InstancesRepo {
  private readonly registerStmt;
  private readonly heartbeatStmt;
  private readonly getStmt;
  private readonly listStmt;
  private readonly pruneStmt;

  constructor(db: Db) {
    this.registerStmt = db.prepare(
      `INSERT INTO instances (id, address, version, started_at, heartbeat_at, stream_clients) VALUES (?, ?, ?, ?, ?, 0)
       ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,
         started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stream_clients = 0`,
    );
    this.heartbeatStmt = db.prepare('UPDATE instances SET heartbeat_at = ?, stream_clients = ? WHERE id = ?');
    this.getStmt = db.prepare<[string], Row>('SELECT * FROM instances WHERE id = ?');
    this.listStmt = db.prepare<[], Row>('SELECT * FROM instances ORDER BY id');
    this.pruneStmt = db.prepare('DELETE FROM instances WHERE heartbeat_at < ?');
  }

  /** Records an instance as started (its heartbeat is its start). */
  register(i: Omit<InstanceRecord, 'heartbeatAt' | 'streamClients'>): void {
    this.registerStmt.run(i.id, i.address, i.version, i.startedAt, i.startedAt);
  }

  /** @returns false when the id is not registered. */
  heartbeat(id: string, at: string, streamClients: number): boolean {
    return this.heartbeatStmt.run(at, streamClients, id).changes === 1;
  }

  get(id: string): InstanceRecord | undefined {
    const r = this.getStmt.get(id);
    return r && instanceFromRow(r);
  }

  list(): InstanceRecord[] {
    return this.listStmt.all().map(instanceFromRow);
  }

  /** Deletes instances whose heartbeat is older than `before` (ISO-8601). */
  prune(before: string): number {
    return this.pruneStmt.run(before).changes;
  }
}
