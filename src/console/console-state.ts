/**
 * The console's recorded state (issue: console state), built once by the composition root:
 * proposals and decisions, take actions and states, memory toggles, fallback counts, clicks,
 * workspace state, selection and recent items, all in the state database.
 */
import type { Registries } from '../registry/index.js';
import { ClickLog } from './clicks.js';
import type { StateCommitter } from '../state/state-store.js';
import { FallbackCounter } from './fallbacks.js';
import { MemoryToggles } from './memory-toggles.js';
import { ProposalDesk } from './proposals.js';
import { Selections } from './selection.js';
import { TakeStateBook, type TakeFileReader } from './take-states.js';
import { WorkspaceStates } from './workspace.js';

/** Corrupt-blob reports kept per workspace id (the state store's `workspaceReportsKept`). */
export const WORKSPACE_REPORTS_KEPT = 20;

export interface ConsoleStateOptions {
  /** Reads a take file of the store for take actions (EngineStore.readTakeFile). */
  readonly readTakeFile: TakeFileReader;
  /** The registries the start-up guards checked: proposal kinds and sanctioned fallbacks. */
  readonly registries: Registries;
  /** Bound on a reported workspace blob, bytes of JSON. */
  readonly workspaceReportMaxBytes: number;
}

export class ConsoleState {
  private constructor(
    readonly fallbacks: FallbackCounter,
    readonly proposals: ProposalDesk,
    /** Also the engine store's take-state source. */
    readonly takes: TakeStateBook,
    /** Also the engine store's memory-toggle source. */
    readonly memory: MemoryToggles,
    readonly clicks: ClickLog,
    readonly workspace: WorkspaceStates,
    readonly selection: Selections,
  ) {}

  /**
   * Reads the take states and memory toggles again, which feed the engine store's answers
   * (cluster mode: another instance changed them). Calls made while one runs share it, then
   * run once more, so the last change is always read.
   */
  reload(): Promise<void> {
    if (this.reloading) {
      this.reloadAgain = true;
      return this.reloading;
    }
    this.reloading = (async () => {
      try {
        do {
          this.reloadAgain = false;
          await Promise.all([this.takes.reload(), this.memory.reload()]);
        } while (this.reloadAgain);
      } finally {
        this.reloading = undefined;
      }
    })();
    return this.reloading;
  }

  private reloading: Promise<void> | undefined;
  private reloadAgain = false;

  /**
   * Loads the recorded take states and toggles from the state store (migrated, with its bounds
   * on clicks and workspace reports) and builds the console's services over it.
   * @throws the state store's errors (src/state/errors.ts).
   */
  static async open(state: StateCommitter, opts: ConsoleStateOptions): Promise<ConsoleState> {
    const store = state.store;
    const fallbacks = new FallbackCounter(store.fallbacks, opts.registries.fallbacks);
    const [takes, memory] = await Promise.all([TakeStateBook.load(state, fallbacks, opts.readTakeFile), MemoryToggles.load(state)]);
    return new ConsoleState(
      fallbacks,
      new ProposalDesk(state, fallbacks, opts.registries.proposalKinds),
      takes,
      memory,
      new ClickLog(store.clicks),
      new WorkspaceStates(store.workspace, opts.workspaceReportMaxBytes),
      new Selections(store),
    );
  }
}
