/**
 * Terminals in cluster mode (cluster.md, Terminals): each runs on the instance that started it; its record
 * in the database makes the status global and lets a stop reach the owner (owner-requests.ts).
 */
import { checkId } from '../engine/ids.js';
import { projectDir } from '../engine/project-file.js';
import type { StateStore, TerminalRecord } from '../state/state-store.js';
import { KeyedQueue, type StartResult, type StopResult, type TerminalInfo, type TerminalManager, type Terminals } from '../terminals/index.js';
import { OwnerRequests } from './owner-requests.js';

/** Terminal stops routed to their owner: payload `<owner instance id> <project id>`. */
export const TERMINAL_STOP_CHANNEL = 'console_terminal_stop';
/** Their acknowledgements: payload `<project id> done|not_running`. */
export const TERMINAL_STOP_ACK_CHANNEL = 'console_terminal_stop_ack';

export interface ClusterTerminalsOptions {
  /** This instance's id. */
  readonly self: string;
  /** Sends a notification to every instance. */
  readonly notify: (channel: string, payload: string) => Promise<void>;
  /** CONSOLE_DATA_DIR: a terminal's cwd is its project's folder there (the same on every instance). */
  readonly storeRoot: string;
  /** TTYD_COMMAND (the same on every instance). */
  readonly command: readonly string[];
  /** Told when a record could not be written (the database away). */
  readonly onRecordFailed?: (err: unknown) => void;
}

/** Every instance's terminals (see the module's comment). */
export class ClusterTerminals implements Terminals {
  readonly requests: OwnerRequests;
  private readonly writes = new KeyedQueue();

  constructor(
    private readonly local: TerminalManager,
    private readonly store: StateStore,
    private readonly options: ClusterTerminalsOptions,
  ) {
    this.requests = new OwnerRequests({
      self: options.self,
      what: 'terminal stop',
      channel: TERMINAL_STOP_CHANNEL,
      ackChannel: TERMINAL_STOP_ACK_CHANNEL,
      notify: options.notify,
      handle: async (projectId) => {
        if (this.local.get(projectId)?.state !== 'running') return 'not_running';
        const outcome = await this.local.stop(projectId).then(
          (r) => (r.stopped ? ('done' as const) : ('not_running' as const)),
          () => 'not_running' as const,
        );
        // Acknowledged once its record says so: the asker reads it next.
        await this.writes.settled(projectId);
        return outcome;
      },
    });
  }

  /** Records a terminal of this instance as it starts or ends (TerminalManagerOptions.onRecord). */
  record(t: TerminalInfo): void {
    const rec: TerminalRecord = {
      projectId: t.projectId,
      instanceId: this.options.self,
      pid: t.pid,
      port: t.port,
      url: t.url,
      state: t.state,
      startedAt: t.startedAt,
      endedAt: t.endedAt,
      rc: t.rc,
      signal: t.signal,
      credential: t.credential,
    };
    this.writes.run(t.projectId, () => this.store.terminals.put(rec)).catch((err: unknown) => this.options.onRecordFailed?.(err));
  }

  async start(projectId: string): Promise<StartResult> {
    const remote = await this.runningElsewhere(checkId('project_id', projectId));
    if (remote) return { created: false, terminal: this.infoOf(remote) };
    return this.local.start(projectId);
  }

  async stop(projectId: string): Promise<StopResult> {
    const id = checkId('project_id', projectId);
    const remote = this.local.get(id)?.state === 'running' ? null : await this.runningElsewhere(id);
    if (!remote) return this.local.stop(id);
    const outcome = await this.requests.ask(remote.instanceId, id);
    const now = (await this.store.terminals.get(id)) ?? remote;
    return { stopped: outcome === 'done', terminal: this.infoOf(now) };
  }

  async get(projectId: string): Promise<TerminalInfo | null> {
    const here = this.local.get(projectId);
    if (here?.state === 'running') return here;
    const rec = await this.store.terminals.get(projectId);
    if (rec && rec.instanceId !== this.options.self && (here === null || rec.startedAt > here.startedAt)) return this.infoOf(rec);
    return here;
  }

  async list(): Promise<TerminalInfo[]> {
    const out = new Map(this.local.list().map((t) => [t.projectId, t]));
    for (const rec of await this.store.terminals.list()) {
      if (rec.instanceId === this.options.self) continue;
      const here = out.get(rec.projectId);
      if (here === undefined || (here.state !== 'running' && rec.startedAt > here.startedAt)) out.set(rec.projectId, this.infoOf(rec));
    }
    return [...out.values()].sort((a, b) => a.projectId.localeCompare(b.projectId));
  }

  private async runningElsewhere(projectId: string): Promise<TerminalRecord | null> {
    const rec = await this.store.terminals.get(projectId);
    return rec && rec.state === 'running' && rec.instanceId !== this.options.self ? rec : null;
  }

  private infoOf(rec: TerminalRecord): TerminalInfo {
    return {
      projectId: rec.projectId,
      state: rec.state as TerminalInfo['state'],
      pid: rec.pid ?? 0,
      port: rec.port,
      url: rec.url,
      cwd: projectDir(this.options.storeRoot, rec.projectId),
      command: this.options.command,
      // The program's arguments are its instance's to know.
      argv: [],
      startedAt: rec.startedAt,
      endedAt: rec.endedAt,
      rc: rec.rc,
      signal: rec.signal,
      credential: rec.credential ?? null,
    };
  }
}
