/**
 * The SQLite back end of the state store: an adapter over the synchronous repositories (the fast path),
 * each method calling one. One connection serves the process, so calls queue on one promise chain and a
 * transaction holds the queue from `BEGIN IMMEDIATE` to commit: ids are handed out in commit order, and the
 * repositories' own transactions nest as savepoints.
 */
import { proposalOf, type BusEvent } from '../../bus/event.js';
import { whileQuiet } from '../../bus/local-event-log.js';
import { ClicksRepo } from './clicks-repo.js';
import { openStateDb, type Db } from './db.js';
import { DecisionsRepo } from './decisions-repo.js';
import { stateDbFault } from './errors.js';
import { EventLog, type EventRow } from './event-log.js';
import { FallbacksRepo } from './fallbacks-repo.js';
import { InstancesRepo } from './instances-repo.js';
import { JobOwnersRepo } from './job-owners-repo.js';
import { JobsRepo } from './jobs-repo.js';
import type { JobRecord } from '../records.js';
import { MemoryTogglesRepo } from './memory-toggles-repo.js';
import { ProposalsRepo } from './proposals-repo.js';
import { SelectionRepo } from './selection-repo.js';
import type { EventDraft, StateRepos, StateStore, StateTx, StoredJob } from '../state-store.js';
import { TakeStateRepo } from './take-state-repo.js';
import { TerminalsRepo } from './terminals-repo.js';
import { WorkspaceRepo } from './workspace-repo.js';

/** Bounds and identity of a SQLite state store. */
export interface SqliteStateStoreOptions {
  /** Owner of jobs recorded before jobs had one. */
  readonly instanceId: string;
  /** CONSOLE_EVENT_RETENTION. */
  readonly eventRetention: number;
  /** CONSOLE_CLICKS_PER_PROJECT. */
  readonly clicksPerProject: number;
  /** CONSOLE_CLICKS_MAX_TOTAL. */
  readonly clicksMaxTotal: number;
  /** Corrupt-blob reports kept per workspace id. */
  readonly workspaceReportsKept: number;
  /** The bus's event log when open on the same database (ids must come from one log); default: its own. */
  readonly eventLog?: EventLog;
}

type Run = <T>(work: () => T) => Promise<T>;

function guarded<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    throw stateDbFault(err) ?? err;
  }
}

/**
 * Opens (creating and migrating) the SQLite state database at `file` as a store that owns the connection.
 * @throws StateDbError as {@link openStateDb}.
 */
export function openSqliteStateStore(file: string, opts: SqliteStateStoreOptions): SqliteStateStore {
  const db = openStateDb(file);
  try {
    return new SqliteStateStore(db, opts, true);
  } catch (err) {
    db.close();
    throw err;
  }
}

/** The state store on the SQLite database of one instance (see the module's comment). */
export class SqliteStateStore implements StateStore {
  readonly backend = 'sqlite' as const;
  readonly proposals;
  readonly decisions;
  readonly fallbacks;
  readonly memoryToggles;
  readonly takeStates;
  readonly clicks;
  readonly workspace;
  readonly selection;
  readonly jobs;
  readonly events;
  readonly instances;
  readonly terminals;
  private tail: Promise<unknown> = Promise.resolve();
  private readonly log: EventLog;
  private readonly sync;
  private txEvents = false;

  /** @param owned whether {@link close} closes `db`. */
  constructor(
    private readonly db: Db,
    opts: SqliteStateStoreOptions,
    private readonly owned = false,
  ) {
    this.log = opts.eventLog ?? new EventLog(db, opts.eventRetention);
    this.sync = {
      proposals: new ProposalsRepo(db),
      decisions: new DecisionsRepo(db),
      fallbacks: new FallbacksRepo(db),
      memory: new MemoryTogglesRepo(db),
      takes: new TakeStateRepo(db),
      clicks: new ClicksRepo(db, opts.clicksPerProject, opts.clicksMaxTotal),
      workspace: new WorkspaceRepo(db, opts.workspaceReportsKept),
      selection: new SelectionRepo(db),
      jobs: new JobsRepo(db),
      owners: new JobOwnersRepo(db, opts.instanceId),
      instances: new InstancesRepo(db),
      terminals: new TerminalsRepo(db),
    };
    const read: Run = (work) => this.queue(async () => guarded(work));
    // Before this connection writes, an append on the event writer thread ends (awaited, the main thread serves
    // meanwhile) and none starts until it wrote: the two never wait for each other's lock.
    const write: Run = (work) => this.queue(() => whileQuiet(this.log.quiesce(), () => guarded(work)));
    const repos = this.repos(read, write);
    this.proposals = repos.proposals;
    this.decisions = repos.decisions;
    this.fallbacks = repos.fallbacks;
    this.memoryToggles = repos.memoryToggles;
    this.takeStates = repos.takeStates;
    this.clicks = repos.clicks;
    this.workspace = repos.workspace;
    this.selection = repos.selection;
    this.jobs = repos.jobs;
    this.events = repos.events;
    this.instances = repos.instances;
    this.terminals = repos.terminals;
  }

  get schemaVersion(): number {
    return this.db.pragma('user_version', { simple: true }) as number;
  }

  /** @inheritdoc */
  transaction<T>(fn: (tx: StateTx) => Promise<T>): Promise<T> {
    // Appends on the writer thread end first (awaited); until the transaction ends none starts (EventLog.quiesce).
    return this.queue(() => whileQuiet(this.log.quiesce(), () => this.inTransaction(fn)));
  }

  /** Runs `fn` in a transaction on this connection (no append on the writer thread). */
  private async inTransaction<T>(fn: (tx: StateTx) => Promise<T>): Promise<T> {
    guarded(() => this.db.exec('BEGIN IMMEDIATE'));
    let open = true;
    this.txEvents = false;
    const inTx: Run = (work) => {
      if (!open) return Promise.reject(new Error('state store: a transaction was used after it ended'));
      return new Promise((resolve) => resolve(guarded(work)));
    };
    const tx = this.repos(inTx, inTx);
    try {
      const result = await fn(tx);
      open = false;
      guarded(() => this.db.exec('COMMIT'));
      return result;
    } catch (err) {
      open = false;
      if (this.db.inTransaction) this.db.exec('ROLLBACK');
      // The event log keeps its segments in memory: it re-reads what the rollback left.
      if (this.txEvents) this.log.resync();
      throw err;
    } finally {
      this.txEvents = false;
    }
  }

  /** @inheritdoc */
  close(): Promise<void> {
    return this.queue(async () => {
      if (this.owned) this.db.close();
    });
  }

  private queue<T>(task: () => Promise<T>): Promise<T> {
    const result = this.tail.then(task);
    this.tail = result.catch(() => undefined);
    return result;
  }

  /** The repositories, reading through `run` and writing through `write`. */
  private repos(run: Run, write: Run): StateRepos {
    const s = this.sync;
    const withOwner = (recs: readonly JobRecord[]): StoredJob[] => {
      const owners = s.owners.ownersOf(recs.map((r) => r.proposalId));
      return recs.map((r) => ({ ...r, instanceId: owners.get(r.proposalId) as string }));
    };
    const byIds = (ids: readonly string[]): StoredJob[] => withOwner(ids.map((id) => s.jobs.get(id) as JobRecord));
    return {
      proposals: {
        insertPending: (p) => write(() => s.proposals.insertPending(p)),
        get: (id) => run(() => s.proposals.get(id)),
        markDecided: (id, decision, at) => write(() => s.proposals.markDecided(id, decision, at)),
        list: (status, limit) => run(() => s.proposals.list(status, limit)),
      },
      decisions: {
        insert: (d) => write(() => s.decisions.insert(d)),
        listFor: (id) => run(() => s.decisions.listFor(id)),
      },
      fallbacks: {
        increment: (name, at) => write(() => s.fallbacks.increment(name, at)),
        all: () => run(() => s.fallbacks.all()),
      },
      memoryToggles: {
        all: () => run(() => s.memory.all()),
        list: () => run(() => s.memory.list()),
        record: (t) => write(() => s.memory.record(t)),
      },
      takeStates: {
        all: () => run(() => s.takes.all()),
        // One writer at a time (the queue): the row read stays as read until the commit.
        lock: (p, take, shot, _lockShot, at) => write(() => s.takes.lock(p, take, shot, at)),
        clearOtherPrimaries: (p, shot, keep, at) => write(() => s.takes.clearOtherPrimaries(p, shot, keep, at)),
        upsert: (st, at) => write(() => s.takes.upsert(st, at)),
        logAction: (a) => write(() => s.takes.logAction(a)),
      },
      clicks: {
        ringSize: s.clicks.ringSize,
        maxTotal: s.clicks.maxTotal,
        append: (c) => write(() => s.clicks.append(c)),
        list: (p, limit) => run(() => s.clicks.list(p, limit)),
        size: () => run(() => s.clicks.size),
      },
      workspace: {
        reportsKept: s.workspace.reportsKept,
        get: (wid) => run(() => s.workspace.get(wid)),
        put: (wid, rev, state, at) => write(() => s.workspace.put(wid, rev, state, at)),
        addReport: (wid, json, reason, at) => write(() => s.workspace.addReport(wid, json, reason, at)),
        reports: (wid, limit) => run(() => s.workspace.reports(wid, limit)),
      },
      selection: {
        get: (p) => run(() => s.selection.get(p)),
        put: (sel) => write(() => s.selection.put(sel)),
        touch: (r, keep) => write(() => s.selection.touch(r, keep)),
        recent: (limit) => run(() => s.selection.recent(limit)),
      },
      jobs: {
        insert: (job) =>
          write(() =>
            this.db.transaction(() => {
              s.jobs.insert(job);
              s.owners.set(job.proposalId, job.instanceId);
            })(),
          ),
        finish: (id, f) => write(() => s.jobs.finish(id, f)),
        prune: (keep) => write(() => s.jobs.prune(keep)),
        markCancelRequested: (id) => write(() => s.jobs.markCancelRequested(id)),
        get: (id) =>
          run(() => {
            const r = s.jobs.get(id);
            return r && withOwner([r])[0];
          }),
        list: (limit, state) => run(() => withOwner(s.jobs.list(limit, state))),
        search: (q) => run(() => withOwner(s.jobs.search(q))),
        running: (instanceId) => run(() => (instanceId === undefined ? withOwner(s.jobs.running()) : byIds(s.owners.runningOf(instanceId)))),
        lostSince: (instanceId, since) => run(() => byIds(s.owners.lostSince(instanceId, since))),
        countsByState: (leaveOut) => run(() => s.jobs.countsByState(leaveOut)),
        lineCounts: (id) => run(() => s.jobs.lineCountsFromEvents(id)),
        markLost: (instanceId, endedAt) => write(() => byIds(this.db.transaction(() => s.owners.markLost(instanceId, endedAt))())),
      },
      events: {
        retention: this.log.retention,
        append: (drafts) => write(() => this.appendEvents(drafts)),
        // SQLite's transactions hold nothing another process waits for: the same as append.
        appendOnCommit: (drafts) => write(() => this.appendEvents(drafts)),
        // One process: a failed SQLite transaction is rolled back for sure, nothing to look up.
        newSource: () => run(() => 0),
        after: (sinceId, limit, filter, upTo) => run((): EventRow[] => this.log.after(sinceId, limit, filter, upTo)),
        newest: (limit, filter) => run(() => this.log.newest(limit, filter)),
        lastId: () => run(() => this.log.lastIssuedId),
        count: () => run(() => this.log.size),
      },
      instances: {
        register: (i) => write(() => s.instances.register(i)),
        heartbeat: (id, at, streams, epoch) => write(() => s.instances.heartbeat(id, at, streams, epoch)),
        judge: (id, heartbeatAt) => write(() => s.instances.judge(id, heartbeatAt)),
        get: (id) => run(() => s.instances.get(id)),
        list: () => run(() => s.instances.list()),
        prune: (before) => write(() => s.instances.prune(before)),
      },
      terminals: {
        put: (t) => write(() => s.terminals.put(t)),
        get: (p) => run(() => s.terminals.get(p)),
        list: () => run(() => s.terminals.list()),
        end: (p, f) => write(() => s.terminals.end(p, f)),
        endAllOf: (id, state, at) => write(() => s.terminals.endAllOf(id, state, at)),
      },
    };
  }

  /** Ids from the event log in queue order (commit order), then one append. */
  private appendEvents(drafts: readonly EventDraft[]): (BusEvent | null)[] {
    if (drafts.length === 0) return [];
    const events: BusEvent[] = drafts.map((d) => ({
      id: String(this.log.takeId()),
      ts: d.ts,
      severity: d.severity,
      scope: d.scope,
      summary: d.summary,
      detail: d.detail,
      payload: d.payload,
    }));
    if (this.db.inTransaction) this.txEvents = true;
    const rows: EventRow[] = events.map((e, i) => {
      const d = drafts[i] as EventDraft;
      return { id: Number(e.id), severity: e.severity, scope: e.scope, proposalId: proposalOf(d), data: JSON.stringify(e), ...(d.guard ? { guard: d.guard } : {}) };
    });
    const kept = this.log.append(rows);
    if (kept === null) return events;
    const stored = new Set(kept.map((r) => r.id));
    return events.map((e) => (stored.has(Number(e.id)) ? e : null));
  }
}
