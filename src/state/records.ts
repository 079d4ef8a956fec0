// The state database's records as both back ends return them; times are ISO-8601 UTC strings.
import type { JobEnd } from '../bus/event.js';

export type { JobEnd };

/** A stored click; `meta` is the caller's object or null. */
export interface ClickRecord {
  readonly id: number;
  readonly projectId: string;
  readonly target: string;
  readonly x: number | null;
  readonly y: number | null;
  readonly meta: Readonly<Record<string, unknown>> | null;
  readonly clickedAt: string;
}

/** One recorded decision. `extra` holds the caller's extra payload members. */
export interface DecisionRecord {
  readonly id: number;
  readonly proposalId: string;
  readonly decision: string;
  /** The kind evaluated with (body, else stored), null when none. */
  readonly kind: string | null;
  readonly label: string;
  readonly wasPending: boolean;
  readonly deferredExecution: boolean;
  readonly severity: string;
  readonly scope: string;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly decidedAt: string;
}

/** A job as stored and served by `GET /api/jobs`. */
export interface JobRecord {
  readonly proposalId: string;
  readonly projectId: string;
  readonly pid: number | null;
  readonly argv: readonly string[];
  readonly state: string;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly rc: number | null;
  readonly signal: string | null;
  readonly stdoutLines: number;
  readonly stderrLines: number;
  readonly cancelRequested: boolean;
  /** `exited`, `cancelled`, `shutdown`, `lost` or `spawn failed` (the supervisor's ExitReason); null while running. */
  readonly exitReason: string | null;
  /** For a failed job, the tool's last stderr line. */
  readonly exitDetail: string | null;
}

/** The last toggle of an entry, with the version a mirror compares (incremented by every write). */
export interface MemoryToggleRecord {
  readonly entryId: string;
  readonly on: boolean;
  readonly version: number;
}

export interface ProposalRecord {
  readonly id: string;
  readonly kind: string | null;
  readonly title: string | null;
  readonly payload: Readonly<Record<string, unknown>>;
  /** `pending`, or the decision recorded for it. */
  readonly status: string;
  readonly createdAt: string;
  readonly decidedAt: string | null;
}

/** The stored selection of one project. */
export interface SelectionRecord {
  readonly projectId: string;
  readonly selection: Readonly<Record<string, unknown>>;
  readonly updatedAt: string;
}

/** One recent entry; `kind` is `project` (then `itemId` is the project id) or an item kind. */
export interface RecentRecord {
  readonly projectId: string;
  readonly kind: string;
  readonly itemId: string;
  readonly openedAt: string;
}

/** The current recorded state of one take. */
export interface TakeStateRecord {
  readonly projectId: string;
  readonly takeId: string;
  readonly shotId: string | null;
  readonly primary: boolean;
  readonly circled: boolean;
  readonly rejected: boolean;
  /** Incremented by every write: a mirror takes a row only when it is newer (absent on a record to write). */
  readonly version?: number;
}

/** One logged take action. */
export interface TakeActionRecord {
  readonly projectId: string;
  readonly takeId: string;
  readonly action: string;
  readonly severity: string;
  readonly onDisk: boolean;
  readonly scope: string;
  readonly extra: Readonly<Record<string, unknown>>;
  readonly actedAt: string;
}

/** A stored workspace blob. `state` is the JSON value as the console sent it. */
export interface WorkspaceRecord {
  readonly wid: string;
  readonly revision: number;
  readonly state: unknown;
  readonly updatedAt: string;
}

/** A stored corrupt-blob report. */
export interface WorkspaceReport {
  readonly id: number;
  readonly wid: string;
  readonly reason: string | null;
  readonly blob: unknown;
  readonly bytes: number;
  readonly receivedAt: string;
}

/** Outcome of a conditional write: the new record, or the current revision on a conflict. */
export type PutOutcome = { readonly ok: true; readonly record: WorkspaceRecord } | { readonly ok: false; readonly currentRevision: number };

/** One instance of a cluster (cluster.md, Operations). */
export interface InstanceRecord {
  readonly id: string;
  /** Where the instance is reached, `http://host:port`. */
  readonly address: string;
  readonly version: string;
  readonly startedAt: string;
  readonly heartbeatAt: string;
  /** Its open event streams at its last heartbeat. */
  readonly streamClients: number;
}

/** A terminal's record: where it runs and in what state (cluster.md, Terminals). */
export interface TerminalRecord {
  readonly projectId: string;
  readonly instanceId: string;
  readonly pid: number | null;
  readonly port: number;
  readonly url: string;
  /** `running`, `exited` or `stopped`. */
  readonly state: string;
  readonly startedAt: string;
  readonly endedAt: string | null;
  readonly rc: number | null;
  readonly signal: string | null;
  /** Its HTTP credential, `user:password` (with CONSOLE_API_TOKEN set); absent when none. */
  readonly credential?: string | null;
}

/** A row of `instances`, the same on both back ends. */
export interface InstanceRow {
  id: string;
  address: string;
  version: string;
  started_at: string;
  heartbeat_at: string;
  stream_clients: number;
}

/** A row as a record. */
export const instanceFromRow = (r: InstanceRow): InstanceRecord => ({
  id: r.id,
  address: r.address,
  version: r.version,
  startedAt: r.started_at,
  heartbeatAt: r.heartbeat_at,
  streamClients: Number(r.stream_clients),
});

/** A row of `terminals`, the same on both back ends. */
export interface TerminalRow {
  project_id: string;
  instance_id: string;
  pid: number | null;
  port: number;
  url: string;
  state: string;
  started_at: string;
  ended_at: string | null;
  rc: number | null;
  signal: string | null;
  credential: string | null;
}

/** A row as a record. */
export const terminalFromRow = (r: TerminalRow): TerminalRecord => ({
  projectId: r.project_id,
  instanceId: r.instance_id,
  pid: r.pid,
  port: r.port,
  url: r.url,
  state: r.state,
  startedAt: r.started_at,
  endedAt: r.ended_at,
  rc: r.rc,
  signal: r.signal,
  ...(r.credential ? { credential: r.credential } : {}),
});
