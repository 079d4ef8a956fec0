// Instances and their heartbeats in SQLite (cluster.md, Operations); a single-instance database holds at most its own.
import type { Db } from './db.js';
import { instanceFromRow, type InstanceRecord, type InstanceRow } from '../records.js';

export class InstancesRepo {
  private readonly registerStmt;
  private readonly heartbeatStmt;
  private readonly getStmt;
  private readonly listStmt;
  private readonly pruneStmt;
  private readonly epochBeatStmt;
  private readonly judgeStmt;

  constructor(db: Db) {
    this.registerStmt = db.prepare<[string, string, string, string, string], { epoch: number }>(
      `INSERT INTO instances (id, address, version, started_at, heartbeat_at, stream_clients) VALUES (?, ?, ?, ?, ?, 0)
       ON CONFLICT (id) DO UPDATE SET address = excluded.address, version = excluded.version,
         started_at = excluded.started_at, heartbeat_at = excluded.heartbeat_at, stream_clients = 0, epoch = epoch + 1
       RETURNING epoch`,
    );
    this.heartbeatStmt = db.prepare('UPDATE instances SET heartbeat_at = ?, stream_clients = ? WHERE id = ?');
    this.epochBeatStmt = db.prepare('UPDATE instances SET heartbeat_at = ?, stream_clients = ? WHERE id = ? AND epoch = ?');
    this.judgeStmt = db.prepare('UPDATE instances SET epoch = epoch + 1 WHERE id = ? AND heartbeat_at = ?');
    this.getStmt = db.prepare<[string], InstanceRow>('SELECT * FROM instances WHERE id = ?');
    this.listStmt = db.prepare<[], InstanceRow>('SELECT * FROM instances ORDER BY id');
    this.pruneStmt = db.prepare('DELETE FROM instances WHERE heartbeat_at < ?');
  }

  /** Records an instance as started (its heartbeat `heartbeatAt`, default its start) under a new epoch; @returns the epoch. */
  register(i: Omit<InstanceRecord, 'heartbeatAt' | 'streamClients'> & { readonly heartbeatAt?: string }): number {
    return (this.registerStmt.get(i.id, i.address, i.version, i.startedAt, i.heartbeatAt ?? i.startedAt) as { epoch: number }).epoch;
  }

  /** @returns false when the id is not registered, or (with `epoch`) registered under another epoch. */
  heartbeat(id: string, at: string, streamClients: number, epoch?: number): boolean {
    return (epoch === undefined ? this.heartbeatStmt.run(at, streamClients, id) : this.epochBeatStmt.run(at, streamClients, id, epoch)).changes === 1;
  }

  /** Starts a new epoch of an instance judged dead, when its heartbeat is still `heartbeatAt`; @returns whether it did. */
  judge(id: string, heartbeatAt: string): boolean {
    return this.judgeStmt.run(id, heartbeatAt).changes === 1;
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
