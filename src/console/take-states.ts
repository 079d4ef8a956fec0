// Take actions and the recorded take states (spec: Take actions; api-decisions.md, "Mutations and
// lifecycle routes"); the engine store's {@link TakeStateSource}, each write bumping the project's version.
import type { Severity } from '../bus/event.js';
import { MissingCanonicalFieldError, missingField, type MissingCanonicalFieldDetail } from '../engine/errors.js';
import { checkId } from '../engine/ids.js';
import type { TakeStateSource } from '../engine/store.js';
import type { TakeState, TakeStates } from '../engine/synthesize.js';
import type { TakeStateRecord } from '../state/state-store.js';
import { nowIso } from './now.js';
import type { StateCommitter } from '../state/state-store.js';
import type { FallbackCounter } from './fallbacks.js';
import { evaluateTakeAction, nextTakeState, NO_TAKE_STATE } from './take-action.js';

/** Default scope of take action events (spec: Events table). */
export const TAKE_SCOPE = 'engine';

export interface TakeActionRequest {
  readonly projectId: string;
  readonly takeId: string;
  readonly action: string;
  readonly severity?: Severity;
  readonly scope: string;
  readonly extra?: Readonly<Record<string, unknown>>;
}

/** What an action did: the event's severity, whether the take file exists, the take's state after it. */
export interface TakeActionResult {
  readonly takeId: string;
  readonly action: string;
  readonly severity: Severity;
  readonly onDisk: boolean;
  readonly state: TakeState;
  readonly eventId: string;
}

/** A take file as actions need it; `shotId` null when its contents are not a take, with the 422's reason. */
export type TakeFile = { readonly onDisk: false } | { readonly onDisk: true; readonly shotId: string | null; readonly unreadable: MissingCanonicalFieldDetail | null };

/** Reads a take file in the worker pool, never a pipe or a file outside the store (EngineStore.readTakeFile).
 * @throws MissingCanonicalFieldError when the file cannot be used at all; StoreReadTimeoutError. */
export type TakeFileReader = (projectId: string, takeId: string) => Promise<TakeFile>;

export class TakeStateBook implements TakeStateSource {
  /** project id → take id → state; mirrors `take_states` after each commit. */
  private readonly byProject = new Map<string, Map<string, TakeStateRecord>>();
  private readonly versions = new Map<string, number>();

  private constructor(
    private readonly state: StateCommitter,
    private readonly fallbacks: FallbackCounter,
    private readonly readTakeFile: TakeFileReader,
  ) {}

  /** Loads the recorded take states. @throws the state store's errors. */
  static async load(state: StateCommitter, fallbacks: FallbackCounter, readTakeFile: TakeFileReader): Promise<TakeStateBook> {
    const book = new TakeStateBook(state, fallbacks, readTakeFile);
    for (const r of await state.store.takeStates.all()) book.remember(r);
    return book;
  }

  /** Reads every take state again (cluster mode), bumping changed projects' versions. @throws the state store's errors. */
  async reload(): Promise<void> {
    const moved = new Set<string>();
    for (const r of await this.state.store.takeStates.all()) if (this.remember(r)) moved.add(r.projectId);
    for (const projectId of moved) this.versions.set(projectId, this.version(projectId) + 1);
  }

  /** @inheritdoc Changes on every recorded action of the project. */
  version(projectId: string): number {
    return this.versions.get(projectId) ?? 0;
  }

  /** @inheritdoc */
  snapshot(projectId: string): TakeStates {
    const out: Record<string, TakeState> = {};
    for (const [takeId, s] of this.byProject.get(projectId) ?? []) {
      out[takeId] = { primary: s.primary, circled: s.circled, rejected: s.rejected };
    }
    return out;
  }

  /** The recorded state of one take (all false when none). */
  stateOf(projectId: string, takeId: string): TakeState {
    const s = this.byProject.get(projectId)?.get(takeId);
    return s ? { primary: s.primary, circled: s.circled, rejected: s.rejected } : NO_TAKE_STATE;
  }

  /**
   * Records a take action and its event; a missing take file raises `take_id_not_on_disk` and changes no state.
   * @throws InvalidIdError; MissingCanonicalFieldError (take file unusable, or no readable `shot_id` for `marked_primary`); StoreReadTimeoutError.
   */
  async act(req: TakeActionRequest): Promise<TakeActionResult> {
    checkId('project_id', req.projectId);
    checkId('take_id', req.takeId);
    const file = await this.readTakeFile(req.projectId, req.takeId);
    if (file.onDisk && file.shotId === null && req.action === 'marked_primary') {
      const where = `projects/${req.projectId}/takes/${req.takeId}.json`;
      throw new MissingCanonicalFieldError(file.unreadable ?? missingField(req.projectId, 'shot_id', where, 'is missing or unreadable'));
    }
    const at = nowIso();
    const out = evaluateTakeAction({ ...req, onDisk: file.onDisk });
    const primary = req.action === 'marked_primary';
    const { result, events } = await this.state.commit(async (tx) => {
      await tx.takeStates.logAction({ ...req, severity: out.severity, onDisk: file.onDisk, extra: req.extra ?? {}, actedAt: at });
      const changed: TakeStateRecord[] = [];
      let now: TakeState = NO_TAKE_STATE;
      if (out.fallback) {
        await this.fallbacks.raise(tx, out.fallback, at);
      } else if (file.onDisk) {
        // From the locked committed row, never the mirror, which may trail another instance (cluster.md, "Under faults").
        const row = await tx.takeStates.lock(req.projectId, req.takeId, file.shotId, primary, at);
        const before: TakeState = { primary: row.primary, circled: row.circled, rejected: row.rejected };
        const after = nextTakeState(before, req.action);
        now = after;
        if (primary && file.shotId !== null) changed.push(...(await tx.takeStates.clearOtherPrimaries(req.projectId, file.shotId, req.takeId, at)));
        if (after !== before) {
          // Same rule as the repository: the file's shot wins only when marked primary.
          const shotId = primary ? (file.shotId ?? row.shotId) : (row.shotId ?? file.shotId);
          changed.push(await tx.takeStates.upsert({ projectId: req.projectId, takeId: req.takeId, shotId, ...after }, at));
        } else changed.push(row);
      }
      return { result: { changed, now }, events: [out.event] };
    });
    // The mirror follows the database only once it committed, and never moves backwards.
    let moved = false;
    for (const r of result.changed) moved = this.remember(r) || moved;
    if (moved) this.versions.set(req.projectId, this.version(req.projectId) + 1);
    return {
      takeId: req.takeId,
      action: req.action,
      severity: out.severity,
      onDisk: file.onDisk,
      // What this action committed (the mirror may already hold a newer action's).
      state: file.onDisk && !out.fallback ? result.now : this.stateOf(req.projectId, req.takeId),
      eventId: (events[0] as { id: string }).id,
    };
  }

  /** Takes a committed row into the mirror unless the mirror's is as new, so it never moves backwards; @returns whether it did. */
  private remember(r: TakeStateRecord): boolean {
    let takes = this.byProject.get(r.projectId);
    if (!takes) this.byProject.set(r.projectId, (takes = new Map()));
    const mine = takes.get(r.takeId);
    if (mine !== undefined && (mine.version ?? 0) >= (r.version ?? 0)) return false;
    takes.set(r.takeId, r);
    return true;
  }
}
