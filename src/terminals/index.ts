export {
  TerminalManager,
  scopeOf as terminalScope,
  type TerminalInfo,
  type TerminalManagerOptions,
  type Terminals,
  type TerminalState,
  type StartResult,
  type StopResult,
} from './terminal-manager.js';
export {
  TerminalNotRunningError,
  TerminalPortsExhaustedError,
  TerminalProgramMissingError,
  TerminalStartError,
  type TerminalErrorCode,
} from './errors.js';
