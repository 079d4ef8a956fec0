/** One project terminal as reported, and the names its events and tree marks use. */
import type { ManagedProcess } from '../process/index.js';

/** `running`; `exited` (died by itself); `stopped` (by a stop request or the shutdown). */
export type TerminalState = 'running' | 'exited' | 'stopped';

/** What status, context-window and start report about one terminal. */
export interface TerminalInfo {
  readonly projectId: string;
  readonly state: TerminalState;
  readonly pid: number;
  readonly port: number;
  /** `http://<TTYD_HOST or HOST>:<port>/` */
  readonly url: string;
  /** The project's directory in the engine store (absolute). */
  readonly cwd: string;
  /** The program the terminal runs, with its arguments (TTYD_COMMAND). */
  readonly command: readonly string[];
  /** The full argument list it was started with (resolved program first). */
  readonly argv: readonly string[];
  /** ISO-8601 UTC. */
  readonly startedAt: string;
  readonly endedAt: string | null;
  /** Exit code; 128 + the signal number when a signal ended it; null while running. */
  readonly rc: number | null;
  readonly signal: string | null;
  /** `user:password`, random per terminal, when credentials are on; handed out only by the authenticated API. */
  readonly credential: string | null;
}

/** The terminals as the routes use them: this instance's manager, or every instance's in cluster mode (src/cluster/terminals.ts). */
export interface Terminals {
  start(projectId: string): Promise<StartResult>;
  stop(projectId: string): Promise<StopResult>;
  get(projectId: string): TerminalInfo | null | Promise<TerminalInfo | null>;
  list(): TerminalInfo[] | Promise<TerminalInfo[]>;
}

/** Result of {@link TerminalManager.start}: `created` is false when one was already running. */
export interface StartResult {
  readonly created: boolean;
  readonly terminal: TerminalInfo;
}

/** Result of {@link TerminalManager.stop}: `stopped` is false when none was running. */
export interface StopResult {
  readonly stopped: boolean;
  readonly terminal: TerminalInfo | null;
}

/** The end of a terminal's stderr kept, for the message of a start that failed. */
export const STDERR_TAIL_CHARS = 2000;

/** A terminal as its manager keeps it. */
export class Terminal {
  state: TerminalState = 'running';
  endedAt: string | null = null;
  rc: number | null = null;
  signal: string | null = null;
  stderrTail = '';
  /** Set when we asked it to end (stop or shutdown), so its exit is a stop, not a death. */
  stopReason: 'stop' | 'shutdown' | null = null;
  killing: Promise<void> | undefined;
  /** Resolves once its end is published (set when it starts). */
  exited: Promise<void> = Promise.resolve();

  constructor(
    readonly projectId: string,
    readonly port: number,
    readonly url: string,
    readonly cwd: string,
    readonly command: readonly string[],
    readonly argv: readonly string[],
    readonly startedAt: string,
    readonly proc: ManagedProcess,
    readonly credential: string | null,
  ) {}

  info(): TerminalInfo {
    return {
      projectId: this.projectId,
      state: this.state,
      pid: this.proc.pid,
      port: this.port,
      url: this.url,
      cwd: this.cwd,
      command: this.command,
      argv: this.argv,
      startedAt: this.startedAt,
      endedAt: this.endedAt,
      rc: this.rc,
      signal: this.signal,
      credential: this.credential,
    };
  }
}

/** Scope of a project's terminal events. */
export const scopeOf = (projectId: string) => `terminal/${projectId}`;

/** The environment variable that marks a terminal and its descendants with their service. */
export const TERMINAL_MARK = 'CONSOLE_TERMINAL_OF';

/** The environment variable that marks one terminal's tree (`term_<12 hex>`). */
export const TERMINAL_ID = 'CONSOLE_TERMINAL_ID';
