/**
 * What the routers need, built by the composition root (src/main/service.ts).
 */
import type { Bus } from '../../bus/bus.js';
import type { JobCanceller } from '../../cluster/cancel-routing.js';
import type { Membership } from '../../cluster/membership.js';
import type { ConsoleState } from '../../console/index.js';
import type { SseHub } from '../../bus/sse.js';
import type { EngineStore } from '../../engine/store.js';
import type { GuardReport } from '../../ops/guards.js';
import type { Config } from '../../config/config.js';
import type { Readiness } from '../../ops/readiness.js';
import type { ServiceMetrics } from '../../metrics/index.js';
import type { MetricsHistory } from '../../metrics/history.js';
import type { Supervisor } from '../../supervisor/index.js';
import type { Terminals } from '../../terminals/index.js';
import type { SynthesisPool } from '../../workers/pool.js';
import type { WriteProxy } from '../write-proxy.js';

export interface AppDeps {
  readonly config: Config;
  readonly bus: Bus;
  readonly sse: SseHub;
  readonly store: EngineStore;
  readonly supervisor: Supervisor;
  /** Cancels jobs: the supervisor's own, or in cluster mode routed to the instance that runs the job. */
  readonly cancels: JobCanceller;
  readonly pool: SynthesisPool;
  /** Per-project web terminals (ttyd). */
  readonly terminals: Terminals;
  readonly guards: GuardReport;
  readonly startedAt: Date;
  /** The state database as the system status reports it (`database`): the back end and its figures. */
  readonly database: { status(): Record<string, unknown> };
  /** This instance's membership of a cluster (cluster mode), null on the embedded database. */
  readonly membership: Membership | null;
  /** The console's recorded state: proposals, decisions, take actions, toggles, clicks, workspace, selection. */
  readonly console: ConsoleState;
  /** This instance's Prometheus registry and collectors. */
  readonly metrics: ServiceMetrics;
  /** The write proxy (SERVICE_WRITE_UPSTREAM) and its counters. */
  readonly writeProxy: WriteProxy;
  /** The checks of `GET /api/ready`. */
  readonly readiness: Readiness;
  /** The last 15 minutes of this instance's figures (`GET /api/system-status/history`). */
  readonly history: MetricsHistory;
  /**
   * The descriptor limit (RLIMIT_NOFILE, raised to its hard limit at start-up) and the
   * descriptors open now (system status `descriptors`).
   */
  readonly descriptors: () => { readonly soft: number; readonly hard: number; readonly raisedFrom: number | null; readonly error: string | null; readonly open: number | null };
}
