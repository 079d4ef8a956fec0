// The state store: one asynchronous interface over the state database, on SQLite or PostgreSQL (cluster.md).
// Times are ISO-8601 UTC; event ids increase in commit order, so a reader that has seen id N has seen every
// smaller one. Database faults surface as src/state/errors.ts ServiceErrors.
import type { SharedEventDraft, SharedEventLog } from '../bus/shared-event-log.js';
import type { BusEvent, EventInput, JobEnd, JobStart } from '../bus/event.js';
import type { EventRow } from '../bus/local-event-log.js';
import type { JobPosition, JobQuery } from './job-query.js';
import type {
  ClickRecord,
  DecisionRecord,
  InstanceRecord,
  JobRecord,
  MemoryToggleRecord,
  ProposalRecord,
  PutOutcome,
  RecentRecord,
  SelectionRecord,
  TakeActionRecord,
  TakeStateRecord,
  TerminalRecord,
  WorkspaceRecord,
  WorkspaceReport,
} from './records.js';

export type { ClickRecord, DecisionRecord, EventRow, InstanceRecord, JobRecord, TerminalRecord, MemoryToggleRecord, ProposalRecord, RecentRecord, SelectionRecord, TakeActionRecord, TakeStateRecord };
export type { PutOutcome, WorkspaceRecord, WorkspaceReport };
export type { JobPosition, JobQuery };

/** Which back end a state store is (src/main/backend.ts wraps one). */
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
  /** Marks a pending proposal decided with a conditional update: of concurrent calls on one id, exactly one returns true. */
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
  /** The last toggle of every toggled entry, with the version a mirror compares. */
  list(): Promise<MemoryToggleRecord[]>;
  /** Records a toggle; resolves to the entry's row as it is now. */
  record(t: MemoryToggleWrite): Promise<MemoryToggleRecord>;
}

/** Take states and the action log (one primary per shot); an action locks the committed row, never a mirror (cluster.md, "Under faults"). */
export interface TakeStateStore {
  all(): Promise<TakeStateRecord[]>;
  /** The take's committed state (created all false), locked until the transaction ends; `lockShot` first locks
   * the shot, so two instances marking takes of one shot primary are serialised. */
  lock(projectId: string, takeId: string, shotId: string | null, lockShot: boolean, at: string): Promise<TakeStateRecord>;
  /** Clears `primary` on the shot's other takes; resolves to the rows that lost it, as they are now. */
  clearOtherPrimaries(projectId: string, shotId: string, keepTakeId: string, at: string): Promise<TakeStateRecord[]>;
  /** The file's shot wins only when the take is marked primary; resolves to the row as it is now. */
  upsert(s: TakeStateRecord, at: string): Promise<TakeStateRecord>;
  logAction(a: TakeActionRecord): Promise<void>;
}

/** A click to append (`id` is assigned). */
export type NewClick = Omit<ClickRecord, 'id'>;

/** Clicks: ring per project and total bound, enforced in the append's own transaction (not in {@link StateTx}: no events). */
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
  /** Writes when `expectedRevision` is current (0: never written); of concurrent writes with one revision, one wins. */
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

/** A job's end: the final state its exit or lost event commits with. */
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
  /** `GET /api/jobs` (job-query.ts), newest first. */
  search(q: JobQuery): Promise<StoredJob[]>;
  /** Jobs recorded as running: all, or only those of `instanceId`. */
  running(instanceId?: string): Promise<StoredJob[]>;
  /** Jobs of `instanceId` marked `lost` since `since`: judged while it was away, processes maybe still running here. */
  lostSince(instanceId: string, since: string): Promise<StoredJob[]>;
  /** Jobs by state over the whole table, those named in `leaveOut` (proposal ids) not counted. */
  countsByState(leaveOut?: readonly string[]): Promise<Record<string, number>>;
  /** Output lines as the stored line events count them, for a job whose run died before storing its counts. */
  lineCounts(proposalId: string): Promise<{ stdoutLines: number; stderrLines: number }>;
  /** Marks a dead instance's running jobs `lost` in one conditional update; @returns those this call marked (cluster.md, "Jobs"). */
  markLost(instanceId: string, endedAt: string): Promise<StoredJob[]>;
}

/** An event to store: the event without its id, which the store assigns (the bus's port, cluster-bus.ts). */
export type EventDraft = SharedEventDraft;

/**
 * The most (severity, scope) pairs a filtered event read merges, each through its index, on
 * either back end; past it the read walks the log with the filter instead.
 */
export const MAX_FILTER_PAIRS = 64;

/** The event log: ids global, strictly increasing in commit order. */
export interface EventStore extends SharedEventLog {
  /** Newest events kept at least (CONSOLE_EVENT_RETENTION); at most a segment more. */
  readonly retention: number;
  /**
   * Stores events with their job states; @returns them with ids, null for one its guard dropped. In a transaction
   * on PostgreSQL use {@link appendOnCommit}, as the sequencer is held until commit.
   */
  append(drafts: readonly EventDraft[], retryAfter?: number | null): Promise<(BusEvent | null)[]>;
  /** {@link append} sent with the commit in one round trip, so the sequencer is never held waiting for this instance.
   * Resolves after commit: never await it inside the transaction. @throws the database's error when it failed. */
  appendOnCommit(drafts: readonly EventDraft[]): Promise<(BusEvent | null)[]>;
}

/** Instances and heartbeats, with an epoch renewed when judged dead, so a paused instance learns it (cluster.md, "Under faults"). */
export interface InstanceStore {
  /** Records an instance as started under a new epoch (replacing an earlier record); @returns the epoch. */
  register(i: Omit<InstanceRecord, 'heartbeatAt' | 'streamClients'> & { readonly heartbeatAt?: string }): Promise<number>;
  /** Moves the heartbeat; @returns false when the id is not registered under `epoch` (judged dead). */
  heartbeat(id: string, at: string, streamClients: number, epoch?: number): Promise<boolean>;
  /** Starts a new epoch of an instance judged dead if its heartbeat is still `heartbeatAt`. */
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
  /** Ends every running terminal of a dead instance; resolves to those ended. */
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

/** The repositories inside one transaction: all their writes commit together, or none. Not for use after it settled. */
export type StateTx = Omit<StateRepos, 'clicks'>;

/** The state store. */
export interface StateStore extends StateRepos {
  readonly backend: BackendKind;
  /** How many schema migrations the database holds. */
  readonly schemaVersion: number;
  /** Runs `fn` in one transaction, events included: commits when it resolves, else rolls back. @throws what `fn` throws. */
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

/** Commits a state change with its events (cluster.md, "Under faults"); implemented in sqlite/committer.ts and pg/committer.ts. */
export interface StateCommitter {
  /** The state store the writes go to (reads go to it directly). */
  readonly store: StateStore;
  /** Runs `write` in one transaction with its events, delivered only after commit.
   * @throws whatever `write`, the event log or the commit throws (rolled back, nothing delivered). */
  commit<T>(write: StateWrite<T>): Promise<{ result: T; events: BusEvent[] }>;
  /**
   * Stores a generation job's start (the job `running`, its pending GenerationProposal) with its spawn event, in one
   * transaction, or none (cluster.md). @returns the stored event. @throws the state store's error (nothing stored).
   */
  launch(start: JobStart, spawned: EventInput): Promise<BusEvent>;
}

/** A job's start written through `tx` ({@link StateCommitter.launch} by {@link StateCommitter.commit}). */
export async function writeJobStart(tx: StateTx, start: JobStart): Promise<void> {
  await tx.jobs.insert({ ...start.job, argv: [...start.job.argv], state: 'running' });
  await tx.proposals.insertPending(start.proposal);
}
