/**
 * Per-project web terminals (api-decisions.md §Service routes with partial shape): one `ttyd` per project, its whole tree killed
 * on stop; each carries `CONSOLE_TERMINAL_OF=<state database path>` so the next start can kill what a SIGKILLed service left.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type { Bus } from '../bus/bus.js';
import { unknownProject } from '../engine/errors.js';
import { checkId } from '../engine/ids.js';
import { projectDir } from '../engine/project-file.js';
import { describeLeftovers, ProcessSpawnError, spawnManaged, sweepTree, type ManagedProcess, type ProcessEnd, type HousekeepingThread, type SweepBounds } from '../process/index.js';
import { TerminalStartError } from './errors.js';
import { findProgram } from './find-program.js';
import { KeyedQueue } from './keyed-queue.js';
import { acceptsConnections, PortPool } from './port-pool.js';
import { interfaceFor, newCredential, shownArgv, terminalArgs, urlOf } from './terminal-launch.js';
import { scopeOf, STDERR_TAIL_CHARS, Terminal, TERMINAL_ID, TERMINAL_MARK, type StartResult, type StopResult, type TerminalInfo, type Terminals } from './terminal.js';

export type { StartResult, StopResult, TerminalInfo, Terminals, TerminalState } from './terminal.js';

export interface TerminalManagerOptions {
  /** Engine store root; a terminal's cwd is `<root>/projects/<projectId>`. */
  readonly storeRoot: string;
  /** TTYD_BIN: an absolute path or a name looked up on the child PATH at each start. */
  readonly bin: string;
  /** TTYD_COMMAND. */
  readonly command: readonly string[];
  readonly portFirst: number;
  readonly portLast: number;
  /** Listen address: loopback, unless credentials are on (then HOST; service.ts decides). */
  readonly host: string;
  /** Each terminal asks for an HTTP credential of its own (CONSOLE_API_TOKEN set). */
  readonly credentials?: boolean;
  /** Host name put in terminal URLs: TTYD_HOST when set, else HOST. */
  readonly urlHost: string;
  /** Environment of the terminal program; its PATH is where TTYD_BIN is looked up. */
  readonly env: Readonly<Record<string, string>>;
  /** `CONSOLE_TERMINAL_OF` value marking this service's terminals: the state database's path. */
  readonly owner: string;
  /** Ms between SIGTERM and SIGKILL on stop and shutdown. */
  readonly killGraceMs: number;
  /** Bounds of the sweep of what a terminal's tree left running after its exit (and at start-up). */
  readonly sweep: SweepBounds;
  /** Ceiling on the wait for a new terminal to accept connections before start returns. */
  readonly readyTimeoutMs: number;
  /** Told of each terminal as it starts and as it ends (cluster mode records it for every instance). Must not throw. */
  readonly onRecord?: (t: TerminalInfo) => void;
}

export class TerminalManager implements Terminals {
  private readonly terminals = new Map<string, Terminal>();
  private readonly queue = new KeyedQueue();
  private readonly ports: PortPool;
  private readonly iface: string | null;
  private stopping = false;
  private readonly mark: string;
  private readonly childEnv: Readonly<Record<string, string>>;

  constructor(
    private readonly bus: Bus,
    private readonly procs: HousekeepingThread,
    private readonly options: TerminalManagerOptions,
  ) {
    this.mark = `${TERMINAL_MARK}=${options.owner}`;
    this.childEnv = { ...options.env, [TERMINAL_MARK]: options.owner };
    this.iface = interfaceFor(options.host);
    this.ports = new PortPool(options.portFirst, options.portLast, this.iface ?? '0.0.0.0');
  }

  /**
   * Starts the project's terminal, or returns the running one. @throws InvalidIdError, NotFoundError (no project directory),
   * TerminalProgramMissingError, TerminalPortsExhaustedError, TerminalStartError (exited early, refused, or stopping).
   */
  start(projectId: string): Promise<StartResult> {
    const id = checkId('project_id', projectId);
    const cwd = this.projectDirOf(id);
    return this.queue.run(id, async () => {
      if (this.stopping) throw new TerminalStartError('the service is shutting down');
      const current = this.terminals.get(id);
      if (current?.state === 'running') return { created: false, terminal: current.info() };
      const program = findProgram(this.options.bin, this.options.env.PATH);
      const port = await this.ports.reserve();
      let t: Terminal;
      try {
        t = this.spawn(id, program, port, cwd);
      } catch (err) {
        this.ports.release(port);
        throw err;
      }
      await this.waitReady(t);
      return { created: true, terminal: t.info() };
    });
  }

  /** Stops the project's terminal (SIGTERM to its tree, SIGKILL after the grace), resolving once exited. @throws InvalidIdError, NotFoundError. */
  stop(projectId: string): Promise<StopResult> {
    const id = checkId('project_id', projectId);
    this.projectDirOf(id);
    return this.queue.run(id, async () => {
      const t = this.terminals.get(id);
      if (t?.state !== 'running') return { stopped: false, terminal: t?.info() ?? null };
      await this.kill(t, 'stop');
      return { stopped: true, terminal: t.info() };
    });
  }

  /** The project's terminal (running or not), or null when none was started. */
  get(projectId: string): TerminalInfo | null {
    return this.terminals.get(projectId)?.info() ?? null;
  }

  /** Every terminal started since start-up (the latest per project), by project id. */
  list(): TerminalInfo[] {
    return [...this.terminals.values()].map((t) => t.info()).sort((a, b) => a.projectId.localeCompare(b.projectId));
  }

  get runningCount(): number {
    let n = 0;
    for (const t of this.terminals.values()) if (t.state === 'running') n++;
    return n;
  }

  /**
   * At start-up, before any terminal starts: kills what an earlier run's terminals on this state folder left (holders of its
   * mark, swept), with one warning event in scope `terminal` if any. @returns the number killed (0 without /proc).
   */
  async killLeftovers(): Promise<number> {
    const { killed } = await sweepTree(this.procs, { root: null, pgid: null, mark: this.mark, known: [] }, this.options.sweep);
    if (killed > 0) {
      this.bus.publish({
        severity: 'warning',
        scope: 'terminal',
        summary: `ttyd leftovers killed: ${killed}`,
        detail: `${killed} processes of terminals started by an earlier run on this state folder were still running`,
        payload: { killed },
      });
    }
    return killed;
  }

  /** Refuses new starts and kills every running terminal's tree; resolves when all exited. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.terminals.values()].filter((t) => t.state === 'running').map((t) => this.kill(t, 'shutdown')));
  }

  private projectDirOf(id: string): string {
    const dir = projectDir(this.options.storeRoot, id);
    if (!isDirectory(dir)) throw unknownProject(id);
    return dir;
  }

  private spawn(projectId: string, program: string, port: number, cwd: string): Terminal {
    // A credential of its own: whoever reaches the port without it gets no shell.
    const credential = this.options.credentials ? newCredential() : null;
    const args = terminalArgs(port, this.iface, credential, this.options.command);
    // Its own mark, besides the service's: what its tree leaves running is found by it.
    const id = `term_${randomBytes(6).toString('hex')}`;
    let proc: ManagedProcess;
    try {
      proc = spawnManaged(this.procs, program, args, {
        cwd,
        env: { ...this.childEnv, [TERMINAL_ID]: id },
        stdout: 'ignore',
        stderr: 'pipe',
        mark: `${TERMINAL_ID}=${id}`,
        sweep: this.options.sweep,
      });
    } catch (err) {
      if (err instanceof ProcessSpawnError) throw new TerminalStartError(`the operating system refused to start the terminal program ${program}`, { cause: err });
      throw err;
    }
    const { stderr } = proc.output();
    const t = new Terminal(projectId, port, urlOf(this.options.urlHost, port), cwd, this.options.command, shownArgv(program, args, credential), new Date().toISOString(), proc, credential);
    stderr?.setEncoding('utf8');
    stderr?.on('data', (s: string) => {
      t.stderrTail = (t.stderrTail + s).slice(-STDERR_TAIL_CHARS);
    });
    t.exited = proc.ended.then((end) => this.onEnd(t, end));
    this.terminals.set(projectId, t);
    this.options.onRecord?.(t.info());
    this.bus.publish({
      severity: 'info',
      scope: scopeOf(projectId),
      summary: `ttyd started pid=${t.proc.pid} port=${port}`,
      payload: { project_id: projectId, pid: t.proc.pid, port, url: t.url, cwd, argv: t.argv },
    });
    return t;
  }

  /** Resolves once the terminal accepts connections (or the ceiling passed while it runs). */
  private async waitReady(t: Terminal): Promise<void> {
    const host = this.iface ?? '127.0.0.1';
    const until = Date.now() + this.options.readyTimeoutMs;
    for (;;) {
      if (t.state !== 'running') break;
      if (await acceptsConnections(host, t.port)) return;
      if (Date.now() >= until) return; // slow but alive: reported as running; the URL works once it listens
      const exited = await Promise.race([t.exited.then(() => true), delay(READY_POLL_MS).then(() => false)]);
      if (exited) break;
    }
    await t.exited;
    if (t.stopReason === 'shutdown') throw new TerminalStartError('the service is shutting down');
    const tail = t.stderrTail.trim().split('\n').slice(-3).join(' | ');
    throw new TerminalStartError(`the terminal program exited during start-up (rc=${t.rc})${tail ? `: ${tail}` : ''}`);
  }

  /** Ends a running terminal's tree; idempotent. */
  private kill(t: Terminal, reason: 'stop' | 'shutdown'): Promise<void> {
    if (t.state !== 'running') return Promise.resolve();
    t.killing ??= (async () => {
      t.stopReason = reason;
      t.proc.stop(this.options.killGraceMs);
      await t.exited;
    })();
    return t.killing;
  }

  /** Its exit, once what its tree left running was swept (the managed process did that). */
  private onEnd(t: Terminal, { exit, leftovers }: ProcessEnd): void {
    t.rc = exit.rc;
    t.signal = exit.signal;
    t.endedAt = new Date().toISOString();
    t.state = t.stopReason ? 'stopped' : 'exited';
    this.ports.release(t.port);
    this.options.onRecord?.(t.info());
    if (leftovers.left.length > 0) {
      this.bus.publish({
        severity: 'warning',
        scope: scopeOf(t.projectId),
        summary: `ttyd leftovers survived: ${leftovers.left.length}`,
        detail: describeLeftovers(leftovers),
        payload: { project_id: t.projectId, pid: t.proc.pid, left: leftovers.left.length, passes: leftovers.passes },
      });
    }
    const died = t.stopReason === null;
    this.bus.publish({
      severity: died ? (t.rc === 0 ? 'warning' : 'failure') : 'info',
      scope: scopeOf(t.projectId),
      summary: `ttyd ${died ? 'exited' : 'stopped'} rc=${t.rc}`,
      detail: died && t.stderrTail.trim() ? t.stderrTail.trim().slice(-500) : null,
      payload: { project_id: t.projectId, pid: t.proc.pid, port: t.port, rc: t.rc, signal: t.signal, reason: t.stopReason ?? 'exit' },
    });
  }
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

const READY_POLL_MS = 50;

const delay = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
