export { TerminalManager, type TerminalManagerOptions } from './terminal-manager.js';
export { scopeOf as terminalScope, type StartResult, type StopResult, type TerminalInfo, type Terminals, type TerminalState } from './terminal.js';
export { KeyedQueue } from './keyed-queue.js';
export {
  TerminalNotRunningError,
  TerminalPortsExhaustedError,
  TerminalProgramMissingError,
  TerminalStartError,
  type TerminalErrorCode,
} from './errors.js';
