/**
 * The state store: one asynchronous interface over every table and query of the console's
 * state database, implemented twice (issue 13, item 1; shared/design/cluster.md):
 *
 * - SQLite (src/state/sqlite-state-store.ts), an adapter over the synchronous repositories the
 *   service uses today, for the single-instance default;
 * - PostgreSQL (src/state/pg/), shared by the instances of a cluster.
 *
 * One behaviour test file (test/state/state-store.test.ts) runs against both, so neither drifts.
 * Every method returns a Promise; times are ISO-8601 UTC strings, as today. The record shapes
 * are those of the synchronous repositories; cluster mode adds `instanceId` on jobs, the
 * instances and the terminals.
 *
 * A console write and its events commit together: {@link StateStore.transaction} runs a
 * function over a transaction-scoped set of repositories ({@link StateTx}) and commits once it
 * resolves, or rolls everything back (events included) when it throws. Event ids are assigned
 * by the store, strictly increasing in commit order: a reader that has seen id N has seen every
 * event with a smaller id, whichever instance stored it.
 *
 * Errors: the database's faults are ServiceErrors of src/state/errors.ts (`state_db_full`,
 * `state_db_busy`, `state_db_unavailable`, `state_db_unreachable`), never the driver's errors.
 * Not used by the service yet: the wiring is a later step of issue 13.
 */
import type { SharedEventDraft, SharedEventLog } from '../bus/cluster-bus.js';
import type { BusEvent, EventFilter, EventInput, JobEnd, Severity } from '../bus/event.js';
import type { EventRow } from '../bus/local-event-log.js';
import type { JobPosition, JobQuery } from './job-query.js';
import type { ClickRecord, DecisionRecord, InstanceRecord, JobRecord, MemoryToggleRecord, ProposalRecord, PutOutcome, RecentRecord, SelectionRecord, TakeActionRecord, TakeStateRecord, TerminalRecord, WorkspaceRecord, WorkspaceReport } from './records.js';

export type { ClickRecord, DecisionRecord, EventRow, InstanceRecord, JobRecord, TerminalRecord, MemoryToggleRecord, ProposalRecord, RecentRecord, SelectionRecord, TakeActionRecord, TakeStateRecord };
export type { PutOutcome, WorkspaceRecord, WorkspaceReport };
export type { JobPosition, JobQuery };

/** Which back end a state store is (the service's StateBackend, src/main/backend.ts, wraps one). */
export type BackendKind = 'sqlite' | 'postgres';

/** A new pending proposal. */
export interface NewProposal {
  readonly id: string;
  readonly kind: string | null;
  readonly title: string | null;
  readonly payload: object;
  readonly createdAt: string;
}

/** Proposals (api-decisions.md, "Mutations and lifecycle routes"). */
export interface ProposalStore {
  insertPending(p: NewProposal): Promise<void>;
  get(id: string): Promise<ProposalRecord | undefined>;
  /**
   * Marks a pending proposal decided, with a conditional update: of any number of concurrent
   * calls on one pending id, on any instance, exactly one returns true.
   * @returns false when it was not pending or does not exist (nothing changed).
   */
  markDecided(id: string, decision: string, decidedAt: string): Promise<boolean>;
  /** Newest first, optionally only those with `status`. */
  list(status: string | null, limit: number): Promise<ProposalRecord[]>;
}

/** The log of every decision, fallback ones included. */
export interface DecisionStore {
  /** Appends one decision; resolves to its id (increasing). */
  insert(d: Omit<DecisionRecord, 'id'>): Promise<number>;
  /** Oldest first. */
  listFor(proposalId: string): Promise<DecisionRecord[]>;
}

/** Counts of raised sanctioned fallbacks. */
export interface FallbackStore {
  increment(name: string, at: string): Promise<void>;
  all(): Promise<Map<string, number>>;
}

/** One memory toggle to record. */
export interface MemoryToggleWrite {
  readonly entryId: string;
  readonly on: boolean;
  readonly scope: string;
  readonly extra: object;
  readonly at: string;
}

/** Memory toggles: the last per entry, and the log of all. */
export interface MemoryToggleStore {
  all(): Promise<Map<string, boolean>>;
  /** The last toggle of every toggled entry, with its version (what a mirror compares). */
  list(): Promise<MemoryToggleRecord[]>;
  /** Records a toggle; resolves to the entry's row as it is now. */
  record(t: MemoryToggleWrite): Promise<MemoryToggleRecord>;
}

/**
 * Take states and the log of take actions (one primary per shot, kept by the database). A take
 * action is a read-modify-write in the database, in one transaction: {@link lock} the row as
 * committed, compute its next state, write it (cluster.md, "Under faults": never from a mirror).
 */
export interface TakeStateStore {
  all(): Promise<TakeStateRecord[]>;
  /**
   * The take's state as committed, recorded now (all false, with `shotId`) when it had none, and
   * locked until the transaction ends: a concurrent action on the take waits and then reads what
   * this one wrote. With `lockShot`, the shot (`shotId`) is locked first, so two instances
   * marking two takes of one shot primary at once are serialised (one primary, never a conflict).
   */
  lock(projectId: string, takeId: string, shotId: string | null, lockShot: boolean, at: string): Promise<TakeStateRecord>;
  /** Clears `primary` on the shot's other takes; resolves to the rows that lost it, as they are now. */
  clearOtherPrimaries(projectId: string, shotId: string, keepTakeId: string, at: string): Promise<TakeStateRecord[]>;
  /** Writes a take's state (the file's shot wins only when it is marked primary); resolves to the row as it is now. */
  upsert(s: TakeStateRecord, at: string): Promise<TakeStateRecord>;
  logAction(a: TakeActionRecord): Promise<void>;
}

/** A click to append (`id` is assigned). */
export type NewClick = Omit<ClickRecord, 'id'>;

/**
 * Clicks: a ring per project and a bound on all together, both enforced in the append's own
 * transaction (so clicks are not part of {@link StateTx}: they emit no events).
 */
export interface ClickStore {
  /** Clicks kept per project. */
  readonly ringSize: number;
  /** Clicks kept in all. */
  readonly maxTotal: number;
  append(c: NewClick): Promise<ClickRecord>;
  /** Newest first; `projectId` null lists every project's. */
  list(projectId: string | null, limit: number): Promise<ClickRecord[]>;
  /** Clicks stored now, of all projects. */
  size(): Promise<number>;
}

/** Workspace blobs with revisions, and reported corrupt blobs. */
export interface WorkspaceStore {
  /** Reports kept per workspace id. */
  readonly reportsKept: number;
  get(wid: string): Promise<WorkspaceRecord | undefined>;
  /**
   * Writes when `expectedRevision` is the current one (0: never written); of two concurrent
   * writes with the same revision, on any instances, one wins and the other gets the conflict.
   */
  put(wid: string, expectedRevision: number, state: unknown, at: string): Promise<PutOutcome>;
  /** Stores a corrupt blob (its JSON text), prunes old reports; resolves to the report id. */
  addReport(wid: string, blobJson: string, reason: string | null, at: string): Promise<number>;
  /** Newest first. */
  reports(wid: string, limit: number): Promise<WorkspaceReport[]>;
}

/** Per-project selection and the recent projects and items. */
export interface SelectionStore {
  get(projectId: string): Promise<SelectionRecord | undefined>;
  put(s: SelectionRecord): Promise<void>;
  /** Moves an entry to the front of its list, then prunes the list to `keep`. */
  touch(r: RecentRecord, keep: number): Promise<void>;
  recent(limit: number): Promise<{ projects: RecentRecord[]; items: RecentRecord[] }>;
}

/** A job as the state store keeps it: the record served today, and the instance that runs it. */
export interface StoredJob extends JobRecord {
  /** The instance the job's process runs on (cluster.md, Jobs). */
  readonly instanceId: string;
}

/** A job at spawn. */
export type NewJob = Pick<StoredJob, 'proposalId' | 'projectId' | 'pid' | 'argv' | 'state' | 'startedAt' | 'instanceId'>;

/** A job's end (bus/event.ts JobEnd: the final state an exit or lost event commits with). */
export type JobFinish = JobEnd;

/** Generation jobs of every instance. */
export interface JobStore {
  insert(job: NewJob): Promise<void>;
  finish(proposalId: string, f: JobFinish): Promise<void>;
  /** Deletes finished jobs beyond the newest `keep`; resolves to how many. */
  prune(keep: number): Promise<number>;
  markCancelRequested(proposalId: string): Promise<void>;
  get(proposalId: string): Promise<StoredJob | undefined>;
  /** Newest first, optionally only in `state`. */
  list(limit: number, state?: string): Promise<StoredJob[]>;
  /** The jobs matching `q` (filters and a page), newest first: `GET /api/jobs` (job-query.ts). */
  search(q: JobQuery): Promise<StoredJob[]>;
  /** Jobs recorded as running: all, or only those of `instanceId`. */
  running(instanceId?: string): Promise<StoredJob[]>;
  /**
   * The jobs of `instanceId` marked `lost` that started at or after `since` (ISO-8601): those
   * another instance judged while this one was away, whose processes may still run here.
   */
  lostSince(instanceId: string, since: string): Promise<StoredJob[]>;
  countsByState(): Promise<Record<string, number>>;
  /**
   * A job's output lines as its stored line events count them (`<proposal id> stdout|stderr <n>:`
   * details): for a job whose run died before it stored its counts.
   */
  lineCounts(proposalId: string): Promise<{ stdoutLines: number; stderrLines: number }>;
  /**
   * Marks the running jobs of a dead instance `lost` with one conditional update: of
   * concurrent calls for one instance, each job is returned by exactly one (cluster.md, Jobs).
   * @returns the jobs this call marked, as they are now.
   */
  markLost(instanceId: string, endedAt: string): Promise<StoredJob[]>;
}

/** An event to store: the event without its id, which the store assigns (the bus's port, cluster-bus.ts). */
export type EventDraft = SharedEventDraft;

/** The event log: ids global, strictly increasing in commit order; retention as today. */
export interface EventStore extends SharedEventLog {
  /** Newest events kept at least (CONSOLE_EVENT_RETENTION); at most a segment more are kept. */
  readonly retention: number;
  /**
   * Stores events, assigning their ids, with the job states they carry (event.ts JobGuard: an
   * event whose guard does not hold is dropped). Inside a transaction, the ids are the
   * transaction's until it commits; on PostgreSQL the sequencer is then held until the commit,
   * across the client's round trips: a write appends with {@link appendOnCommit} instead.
   * @param retryAfter a retry of an append whose outcome is unknown (SharedEventLog.append):
   *   events stored then, found by their token, are not stored again (PostgreSQL; SQLite's
   *   failed transactions are rolled back for sure).
   * @returns the events with their ids, in order; null for an event dropped by its guard.
   */
  append(drafts: readonly EventDraft[], retryAfter?: number | null): Promise<(BusEvent | null)[]>;
  /**
   * {@link append} as the last statement of the enclosing transaction, sent with its commit (on
   * PostgreSQL, in one round trip: the sequencer is never held while the database waits for this
   * instance). Resolves once the transaction committed; never await it inside the transaction.
   * @returns the events with their ids, in order; null for an event dropped by its guard.
   * @throws (rejects) the database's error when the transaction failed.
   */
  appendOnCommit(drafts: readonly EventDraft[]): Promise<(BusEvent | null)[]>;
}

/**
 * The instances and their heartbeats. Each record has an epoch (cluster.md, "Under faults":
 * fencing): a new one at every registration and whenever another instance judges it dead, so a
 * heartbeat under its old epoch tells a paused instance that it was judged.
 */
export interface InstanceStore {
  /**
   * Records an instance as started (replacing an earlier record of the id) under a new epoch; its
   * heartbeat `heartbeatAt` (default: `startedAt`), no streams.
   * @returns the epoch.
   */
  register(i: Omit<InstanceRecord, 'heartbeatAt' | 'streamClients'> & { readonly heartbeatAt?: string }): Promise<number>;
  /**
   * Moves the heartbeat and records the instance's open streams.
   * @param epoch when given, only under this epoch.
   * @returns false when the id is not registered, or not under `epoch` (it was judged dead).
   */
  heartbeat(id: string, at: string, streamClients: number, epoch?: number): Promise<boolean>;
  /** Starts a new epoch of an instance judged dead, when its heartbeat is still `heartbeatAt`; resolves to whether it did. */
  judge(id: string, heartbeatAt: string): Promise<boolean>;
  get(id: string): Promise<InstanceRecord | undefined>;
  /** By id. */
  list(): Promise<InstanceRecord[]>;
  /** Deletes instances whose heartbeat is older than `before`; resolves to how many. */
  prune(before: string): Promise<number>;
}

/** The terminals of every instance, one per project. */
export interface TerminalStore {
  /** Records a terminal (replacing the project's earlier record). */
  put(t: TerminalRecord): Promise<void>;
  get(projectId: string): Promise<TerminalRecord | undefined>;
  /** By project id. */
  list(): Promise<TerminalRecord[]>;
  /** Ends a running terminal; resolves false when the project has none running. */
  end(projectId: string, f: { state: string; endedAt: string; rc: number | null; signal: string | null }): Promise<boolean>;
  /** Ends every running terminal of an instance (a dead one); resolves to those it ended. */
  endAllOf(instanceId: string, state: string, endedAt: string): Promise<TerminalRecord[]>;
}

/** Every repository of the state database. */
export interface StateRepos {
  readonly proposals: ProposalStore;
  readonly decisions: DecisionStore;
  readonly fallbacks: FallbackStore;
  readonly memoryToggles: MemoryToggleStore;
  readonly takeStates: TakeStateStore;
  readonly clicks: ClickStore;
  readonly workspace: WorkspaceStore;
  readonly selection: SelectionStore;
  readonly jobs: JobStore;
  readonly events: EventStore;
  readonly instances: InstanceStore;
  readonly terminals: TerminalStore;
}

/**
 * The repositories inside one transaction: everything they write commits together, events
 * included, or nothing does. Not to be used after the transaction's function settled.
 */
export type StateTx = Omit<StateRepos, 'clicks'>;

/** The state store (issue 13, item 1). */
export interface StateStore extends StateRepos {
  readonly backend: BackendKind;
  /** How many schema migrations the database holds. */
  readonly schemaVersion: number;
  /**
   * Runs `fn` in one transaction and commits when it resolves; rolls back (events included:
   * their ids are never seen) when it throws, and rethrows.
   * @throws what `fn` throws; the database's faults as ServiceErrors (src/state/errors.ts).
   */
  transaction<T>(fn: (tx: StateTx) => Promise<T>): Promise<T>;
  /** Closes the connections (the pool); pending calls finish first. */
  close(): Promise<void>;
}

/** What a write returns: its result and the events to publish, in order. */
export interface Written<T> {
  readonly result: T;
  readonly events: readonly EventInput[];
}

/** A write's database work, done through the repositories of its transaction. */
export type StateWrite<T> = (tx: StateTx) => Promise<Written<T>>;

/**
 * Commits a state change with its events, on one back end of the state store (cluster.md,
 * "Under faults": a state change commits with its events). The console's services and the
 * supervisor's job records go through it; the implementations are in src/console/commit.ts.
 */
export interface StateCommitter {
  /** The state store the writes go to (reads go to it directly). */
  readonly store: StateStore;
  /**
   * Runs `write` in one transaction with its events stored in it, and delivers the events to
   * stream clients only once the transaction committed: a commit that fails (disk full) leaves
   * neither the state nor events that anyone saw.
   * @returns the result and the published events (with their ids), in order.
   * @throws whatever `write`, the event log or the commit throws; the transaction is then
   *   rolled back and nothing is delivered.
   */
  commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }>;
}
