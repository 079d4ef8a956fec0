// The console's recorded state in the state database, built once by the composition root.
import type { Registries } from '../registry/index.js';
import { ClickLog } from './clicks.js';
import type { StateCommitter } from '../state/state-store.js';
import { FallbackCounter } from './fallbacks.js';
import { MemoryToggles } from './memory-toggles.js';
import { ProposalDesk } from './proposals.js';
import { Selections } from './selection.js';
import { TakeStateBook, type TakeFileReader } from './take-states.js';
import { WorkspaceStates } from './workspace.js';

/** Corrupt-blob reports kept per workspace id. */
export const WORKSPACE_REPORTS_KEPT = 20;

export interface ConsoleStateOptions {
  /** Reads a store take file for take actions (EngineStore.readTakeFile). */
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
    /** Also the engine store's take-state source (as `memory` is its memory-toggle source). */
    readonly takes: TakeStateBook,
    readonly memory: MemoryToggles,
    readonly clicks: ClickLog,
    readonly workspace: WorkspaceStates,
    readonly selection: Selections,
  ) {}

  /** Reads take states and memory toggles again (cluster mode); a call during a pass shares it and adds one more, so the last change is read. */
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

  /** Loads the recorded take states and toggles and builds the services over them. @throws the state store's errors. */
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
