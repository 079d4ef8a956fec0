export {
  TerminalManager,
  scopeOf as terminalScope,
  type TerminalInfo,
  type TerminalManagerOptions,
  type TerminalState,
  type StartResult,
  type StopResult,
} from './terminal-manager.js';
export { TerminalProgramMissingError, TerminalPortsExhaustedError, TerminalStartError } from './errors.js';
