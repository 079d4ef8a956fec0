/**
 * The console's recorded state (issue: console state), built once by the composition root:
 * proposals and decisions, take actions and states, memory toggles, fallback counts, clicks,
 * workspace state, selection and recent items, all in the state database.
 */
import type { EventBus } from '../bus/bus.js';
import type { Registries } from '../registry/index.js';
import { ClicksRepo } from '../state/clicks-repo.js';
import type { Db } from '../state/db.js';
import { DecisionsRepo } from '../state/decisions-repo.js';
import { FallbacksRepo } from '../state/fallbacks-repo.js';
import { MemoryTogglesRepo } from '../state/memory-toggles-repo.js';
import { ProposalsRepo } from '../state/proposals-repo.js';
import { SelectionRepo } from '../state/selection-repo.js';
import { TakeStateRepo } from '../state/take-state-repo.js';
import { WorkspaceRepo } from '../state/workspace-repo.js';
import { ClickLog } from './clicks.js';
import { FallbackCounter } from './fallbacks.js';
import { MemoryToggles } from './memory-toggles.js';
import { ProposalDesk } from './proposals.js';
import { Selections } from './selection.js';
import { TakeStateBook, type TakeFileReader } from './take-states.js';
import { WorkspaceStates } from './workspace.js';

/** Corrupt-blob reports kept per workspace id. */
export const WORKSPACE_REPORTS_KEPT = 20;

export interface ConsoleStateOptions {
  /** Reads a take file of the store for take actions (EngineStore.readTakeFile). */
  readonly readTakeFile: TakeFileReader;
  /** The registries the start-up guards checked: proposal kinds and sanctioned fallbacks. */
  readonly registries: Registries;
  /** Clicks kept per project. */
  readonly clicksPerProject: number;
  /** Clicks kept in all projects together. */
  readonly clicksMaxTotal: number;
  /** Bound on a reported workspace blob, bytes of JSON. */
  readonly workspaceReportMaxBytes: number;
}

export class ConsoleState {
  readonly fallbacks: FallbackCounter;
  readonly proposals: ProposalDesk;
  /** Also the engine store's take-state source. */
  readonly takes: TakeStateBook;
  /** Also the engine store's memory-toggle source. */
  readonly memory: MemoryToggles;
  readonly clicks: ClickLog;
  readonly workspace: WorkspaceStates;
  readonly selection: Selections;

  /** Loads the recorded take states and toggles; the database must be migrated. */
  constructor(db: Db, bus: EventBus, opts: ConsoleStateOptions) {
    this.fallbacks = new FallbackCounter(new FallbacksRepo(db), opts.registries.fallbacks);
    this.proposals = new ProposalDesk(db, bus, new ProposalsRepo(db), new DecisionsRepo(db), this.fallbacks, opts.registries.proposalKinds);
    this.takes = new TakeStateBook(db, bus, new TakeStateRepo(db), this.fallbacks, opts.readTakeFile);
    this.memory = new MemoryToggles(db, bus, new MemoryTogglesRepo(db));
    this.clicks = new ClickLog(new ClicksRepo(db, opts.clicksPerProject, opts.clicksMaxTotal));
    this.workspace = new WorkspaceStates(new WorkspaceRepo(db, WORKSPACE_REPORTS_KEPT), opts.workspaceReportMaxBytes);
    this.selection = new Selections(db, new SelectionRepo(db));
  }
}
