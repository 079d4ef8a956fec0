/**
 * The supervisor's side of its job I/O thread (job-io-main.ts): jobs are forked, and their output
 * read and framed, there; their lines arrive here in batches and are handed to the supervisor at
 * most TURN_LINES per event-loop turn, each batch acknowledged once handed on (the window that
 * keeps memory bounded and the pipes unread while the bus is behind).
 */
import { Worker } from 'node:worker_threads';
import { ProcessSpawnError } from '../process/errors.js';
import type { SpawnHelperStats } from '../process/spawn-helper.js';
import type { JobSessions } from '../process/spawn-helper-protocol.js';
import { TURN_LINES } from './frame-lines.js';
import type { FromJobIo, JobIoSetup, LineBatch, ToJobIo } from './job-io-protocol.js';
import type { LineHold } from './output-gate.js';
import type { JobIoLimits, JobIoThreadStats, JobLineHandler, JobSpawn, RemoteJob } from './job-io-types.js';
import type { JobOutcome } from './job-state.js';
import { AnswerWatchdog } from '../process/answer-watchdog.js';

export type { JobIoLimits, JobIoThreadStats, JobLineHandler, JobSpawn, RemoteJob } from './job-io-types.js';

interface Entry {
  spawned: (m: Extract<FromJobIo, { kind: 'spawned' | 'refused' }>) => void;
  exited: (m: { code: number | null; signal: NodeJS.Signals | null }) => void;
  onLine: JobLineHandler | null;
  drained: ((end: JobOutcome | null) => void) | null;
  running: boolean;
}

type Queued = LineBatch | Extract<FromJobIo, { kind: 'drained' }>;

/**
 * The job I/O thread's young generation by default, MB (CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB). Its objects (a batch's lines and their JSON) live a few
 * milliseconds; V8's default lets the space grow to about 48 MB, which stayed in the RSS after a storm:
 * P6 243 MB against 260 MB (bench/RESULTS.md, 2026-11-29 fourth session), for no CPU measured per line.
 */
export const JOB_IO_YOUNG_GENERATION_MB = 8;

/**
 * One job I/O thread and its spawn helper process. The death of either while the service runs is
 * reported once to `onDeath` (the jobs' exits and lines cannot be learnt any more).
 */
export class JobIo {
  private readonly worker: Worker;
  private readonly entries = new Map<number, Entry>();
  private nextKey = 1;
  private readonly queue: Queued[] = [];
  /** Next line of `queue[0]` to hand on. */
  private offset = 0;
  private queuedLines = 0;
  private turnScheduled = false;
  /** The bus gates (one per supervisor), and those the thread was told of as held. */
  private readonly gates: LineHold[] = [];
  private readonly heldGates = new Set<LineHold>();
  private closing = false;
  private gone: Error | null = null;
  private spawned = 0;
  private refused = 0;
  private linesTotal = 0;
  private batchesTotal = 0;
  private helperPid: number | null = null;
  private sessions: JobSessions | null = null;
  private tid: number | null = null;
  private nice: number | null = null;
  private closed!: () => void;
  private threadEnded = false;
  /** The last ping sent to the thread, and the last it answered. */
  private pingSeq = 0;
  private pongSeq = 0;
  /** See {@link JobIoSetup.encode}. */
  readonly encodes: boolean;
  /** Resolves when the thread ended. */
  readonly ended: Promise<void>;

  /**
   * Starts the thread (`file`: the compiled job-io-main.js), which forks the spawn helper.
   * @throws Error when `file` does not exist (not built).
   */
  constructor(file: string, setup: JobIoSetup, onDeath: (err: Error) => void, limits: JobIoLimits = {}) {
    this.encodes = setup.encode;
    const young = limits.youngGenerationMb ?? JOB_IO_YOUNG_GENERATION_MB;
    this.worker = new Worker(file, { workerData: setup, name: 'job-io', resourceLimits: young > 0 ? { maxYoungGenerationSizeMb: young } : {} });
    let ended!: () => void;
    this.ended = new Promise((resolve) => (ended = resolve));
    this.closed = ended;
    const die = (reason: string, cause?: Error) => {
      if (this.gone !== null) return;
      // The reason is one line (stderr's at exit, service.ts); the thread's own error, stack and all, is its cause.
      const gone = new Error(reason, cause === undefined ? undefined : { cause });
      this.gone = gone;
      for (const e of this.entries.values()) if (!e.running) e.spawned({ kind: 'refused', key: 0, code: null, message: gone.message });
      if (!this.closing) onDeath(gone);
    };
    this.worker.on('message', (m: FromJobIo) => this.receive(m, die));
    this.worker.on('error', (err) => die(`the job I/O thread failed: ${err.message}`, err));
    this.worker.on('exit', (code) => {
      this.threadEnded = true;
      clearInterval(watchdog);
      die(`the job I/O thread ended (code ${code})`);
      ended();
    });
    // A hang (alive, not answering) is taken for a death too: a ping each tick, answered by the next (answer-watchdog.ts).
    const answers = new AnswerWatchdog(limits.answerLimitMs);
    const watchdog = setInterval(() => {
      if (this.gone !== null || this.closing) return;
      if (this.pongSeq === this.pingSeq) return this.send({ kind: 'ping', seq: ++this.pingSeq });
      if (!answers.tick(this.pingSeq)) return;
      die(answers.hung('job I/O').message);
      void this.worker.terminate();
    }, answers.tickMs).unref();
  }

  /** Holds every job's reads while `gate` is held (the bus's backpressure, output-gate.ts); a gate per supervisor. */
  holdWith(gate: LineHold): void {
    this.gates.push(gate);
  }

  /** Whether a gate holds the output now: no line is handed on. */
  private held(): boolean {
    for (const g of this.gates) if (g.held) return true;
    return false;
  }

  /** The spawn helper's pid and what it did since it started (`jobs.spawner` of the system status). */
  stats(): SpawnHelperStats {
    let running = 0;
    for (const e of this.entries.values()) if (e.running) running++;
    return { pid: this.gone === null ? this.helperPid : null, spawned: this.spawned, refused: this.refused, running, sessions: this.sessions };
  }

  /** The thread's heap limits as its Worker reports them (Node's `worker.resourceLimits`; empty once it ended). */
  heapLimits(): Worker['resourceLimits'] {
    return this.worker.resourceLimits;
  }

  /** The thread's id, nice value, line figures and young generation. */
  threadStats(): JobIoThreadStats {
    const young = this.worker.resourceLimits?.maxYoungGenerationSizeMb ?? null;
    return { tid: this.tid, nice: this.nice, lines: this.linesTotal, batches: this.batchesTotal, queued: this.queuedLines, youngGenerationMb: young };
  }

  /**
   * Starts `order.file` as its own process-group leader, forked by the helper; its output is
   * read on the thread from now on and kept there until {@link RemoteJob.read}.
   * @throws ProcessSpawnError when the OS refuses (errno known), descriptors are lacking, or the thread or helper is gone.
   */
  async spawn(order: JobSpawn): Promise<RemoteJob> {
    if (this.gone !== null || this.closing) {
      this.refused++;
      throw new ProcessSpawnError(order.file, this.gone ?? new Error('the job I/O thread is closed'));
    }
    const key = this.nextKey++;
    let exited!: Entry['exited'];
    const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => (exited = resolve));
    const reply = new Promise<Extract<FromJobIo, { kind: 'spawned' | 'refused' }>>((resolve) => {
      this.entries.set(key, { spawned: resolve, exited, onLine: null, drained: null, running: false });
    });
    this.send({ kind: 'spawn', key, ...order });
    const m = await reply;
    if (m.kind === 'refused') {
      this.entries.delete(key);
      this.refused++;
      const err: NodeJS.ErrnoException = new Error(m.message);
      if (m.code !== null) err.code = m.code;
      throw new ProcessSpawnError(order.file, err);
    }
    this.spawned++;
    const entry = this.entries.get(key) as Entry;
    return {
      pid: m.pid,
      startTime: m.startTime,
      lowered: m.lowered,
      accepted: m.severity,
      encoded: this.encodes,
      exit,
      read: (onLine) => {
        entry.onLine = onLine;
        this.send({ kind: 'read', key });
      },
      stop: (reason) => {
        if (this.gone === null) this.send({ kind: 'stop', key, reason });
      },
      drain: (idleMs) =>
        new Promise<JobOutcome | null>((resolve) => {
          if (this.gone !== null) return resolve(null);
          entry.drained = resolve;
          this.send({ kind: 'drain', key, idleMs });
        }),
      discard: () => {
        this.send({ kind: 'discard', key });
        // Never drained: forgotten at its exit.
        void exit.then(() => this.entries.delete(key));
      },
    };
  }

  /** Lets the helper go and ends the thread; jobs still running keep running. */
  async close(): Promise<void> {
    this.closing = true;
    if (this.gone === null) this.send({ kind: 'close' });
    // The helper died but the thread runs: nothing to let go.
    else if (!this.threadEnded) void this.worker.terminate();
    await this.ended;
  }

  private send(m: ToJobIo): void {
    this.worker.postMessage(m);
  }

  private receive(m: FromJobIo, die: (reason: string) => void): void {
    switch (m.kind) {
      case 'ready':
        this.helperPid = m.helperPid;
        this.tid = m.tid;
        this.nice = m.nice;
        return;
      case 'spawned': {
        const e = this.entries.get(m.key);
        if (e === undefined) return;
        e.running = true;
        e.spawned(m);
        return;
      }
      case 'refused':
        this.entries.get(m.key)?.spawned(m);
        return;
      case 'exit': {
        const e = this.entries.get(m.key);
        if (e === undefined) return;
        e.running = false;
        e.exited({ code: m.code, signal: m.signal });
        return;
      }
      case 'lines':
        this.batchesTotal++;
        this.queuedLines += m.keys.length;
        this.queue.push(m);
        this.scheduleTurn();
        return;
      case 'drained':
        // In line with the batches: it follows the job's last line.
        this.queue.push(m);
        this.scheduleTurn();
        return;
      case 'helper-ready':
        this.sessions = m.sessions;
        return;
      case 'helper-death':
        die(m.message);
        return;
      case 'pong':
        this.pongSeq = m.seq;
        return;
      case 'closed':
        void this.worker.terminate().then(() => this.closed());
        return;
    }
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    setImmediate(this.turn);
  }

  /**
   * Hands at most TURN_LINES lines on, acknowledges them, then yields the loop (the console's reads
   * go between turns). While a gate holds, lines stay queued here, unacknowledged: the thread's
   * window fills and it stops reading the pipes.
   */
  private readonly turn = (): void => {
    this.turnScheduled = false;
    let budget = TURN_LINES;
    let handed = 0;
    while (budget > 0 && this.queue.length > 0 && !this.held()) {
      const head = this.queue[0] as Queued;
      if (head.kind === 'drained') {
        this.queue.shift();
        const e = this.entries.get(head.key);
        this.entries.delete(head.key);
        e?.drained?.(head.end);
        continue;
      }
      const end = Math.min(head.keys.length, this.offset + budget);
      let i = this.offset;
      // The handler publishes, and a publish may close a gate: checked after each line.
      while (i < end) {
        const e = this.entries.get(head.keys[i] as number);
        // A slice of the batch's one string: a view of it, not a copy (job-io-protocol.ts LineBatch).
        const text = head.text.slice(i === 0 ? 0 : (head.ends[i - 1] as number), head.ends[i] as number);
        e?.onLine?.(head.streams[i] as 0 | 1, head.numbers[i] as number, text, head.cut.length > 0 && head.cut.includes(i));
        i++;
        if (this.held()) break;
      }
      handed += i - this.offset;
      budget -= i - this.offset;
      if (i === head.keys.length) {
        this.queue.shift();
        this.offset = 0;
      } else {
        this.offset = i;
      }
    }
    if (handed > 0) {
      this.queuedLines -= handed;
      this.linesTotal += handed;
      this.send({ kind: 'ack', lines: handed });
    }
    this.watchGates();
    if (this.queue.length > 0 && !this.held()) this.scheduleTurn();
  };

  /** Tells the thread to stop reading while a gate holds, and to go on (with a turn here) once none does. */
  private watchGates(): void {
    for (const gate of this.gates) {
      if (!gate.held || this.heldGates.has(gate)) continue;
      if (this.heldGates.size === 0) this.send({ kind: 'hold', held: true });
      this.heldGates.add(gate);
      gate.whenReleased(() => {
        this.heldGates.delete(gate);
        if (this.heldGates.size > 0) return;
        this.send({ kind: 'hold', held: false });
        if (this.queue.length > 0) this.scheduleTurn();
      });
    }
  }
}
