export { ConsoleState, WORKSPACE_REPORTS_KEPT, type ConsoleStateOptions } from './console-state.js';
export {
  DECISIONS,
  DecisionValueError,
  evaluateDecision,
  isDecision,
  NO_KIND_LABEL,
  PROPOSAL_FALLBACK_SCOPE,
  type ConsoleErrorCode,
  type Decision,
  type DecisionInput,
  type DecisionOutcome,
} from './decision.js';
export { defaultTakeSeverity, evaluateTakeAction, nextTakeState, TAKE_ACTIONS, type TakeActionOutcome } from './take-action.js';
export { MEMORY_SCOPE, memoryToggleEvent } from './memory-toggles.js';
export { DECISION_SCOPE, LIFECYCLE_SCOPE, type DecideRequest, type DecideResult } from './proposals.js';
export { TAKE_SCOPE, type TakeActionRequest, type TakeActionResult } from './take-states.js';
export { RECENT_ITEMS_KEPT, RECENT_PROJECTS_KEPT, SELECTION_ITEMS } from './selection.js';
export type { ReportOutcome } from './workspace.js';
export { nowIso } from './now.js';
export type { StateCommitter, StateWrite, Written } from '../state/state-store.js';
