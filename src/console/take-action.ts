// Take actions (spec: Take actions; Events, rule 5) as pure functions: an action's event and the state it leaves.
import type { EventInput, Severity } from '../bus/event.js';
import type { TakeState } from '../engine/synthesize.js';
import { withExtra } from './decision.js';

/** The actions the spec names; any other action name is accepted and reported as info. */
export const TAKE_ACTIONS = ['marked_primary', 'circled_toggled', 'rejected'] as const;

export const NO_TAKE_STATE: TakeState = Object.freeze({ primary: false, circled: false, rejected: false });

export interface TakeActionInput {
  readonly takeId: string;
  readonly action: string;
  /** Whether `projects/<project>/takes/<take_id>.json` exists. */
  readonly onDisk: boolean;
  /** The caller's severity; it overrides the table, except that a take not on disk is `fallback`. */
  readonly severity?: Severity;
  readonly scope: string;
  readonly extra?: Readonly<Record<string, unknown>>;
}

export interface TakeActionOutcome {
  readonly severity: Severity;
  readonly event: EventInput;
  /** `take_id_not_on_disk` when the take file is missing (counted; no event of its own). */
  readonly fallback: 'take_id_not_on_disk' | null;
}

/** Severity by action when the caller gives none: marked_primary success, anything else info. */
export function defaultTakeSeverity(action: string): Severity {
  return action === 'marked_primary' ? 'success' : 'info';
}

/** A take action's event: `Take <action, underscores as spaces>: <take_id>`, payload take_id, action, then extra members. */
export function evaluateTakeAction(input: TakeActionInput): TakeActionOutcome {
  const severity: Severity = !input.onDisk ? 'fallback' : (input.severity ?? defaultTakeSeverity(input.action));
  return {
    severity,
    event: {
      severity,
      scope: input.scope,
      summary: `Take ${input.action.replaceAll('_', ' ')}: ${input.takeId}`,
      detail: null,
      payload: withExtra({ take_id: input.takeId, action: input.action }, input.extra),
    },
    fallback: input.onDisk ? null : 'take_id_not_on_disk',
  };
}

/** A take's state after `action` (spec: Take actions); the caller clears the shot's other primaries. */
export function nextTakeState(s: TakeState, action: string): TakeState {
  switch (action) {
    case 'marked_primary':
      return { ...s, primary: true };
    case 'circled_toggled':
      return { ...s, circled: !s.circled };
    case 'rejected':
      return { ...s, rejected: true };
    default:
      return s;
  }
}
