/**
 * The event append thread of cluster mode (append-task.ts), the main thread's side (README, "Threads"): the bus's
 * appends (`console_append` of each batch, jobs' lines the most, and retention) run there on a pool of its own, so
 * their SQL parameters, the round trips and the results leave the main thread, as SQLite's event writer thread takes
 * its inserts. The main thread makes each batch's columns (a job's line crosses as its JSON made on the job I/O
 * thread), sends them, and gets the ids back. The appends run there one at a time in the order sent, so ids stay in
 * commit order; the bus sends the next while one runs (`ordered`), and those sent before a failure was heard of here
 * are not run (each carries the count of failures heard of, its `epoch`). Its reads go to the store's pool on the
 * main thread.
 */
import fs from 'node:fs';
import { inspect } from 'node:util';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import type { BusEvent } from '../../bus/event.js';
import { type FrameBlock, unpackFrames } from '../../bus/frames.js';
import { AppendNotRunError, type FramedAppend, type SharedEventDraft, type SharedEventLog } from '../../bus/shared-event-log.js';
import { ANSWER_LIMIT_MS, AnswerWatchdog } from '../../process/answer-watchdog.js';
import { appendColumns, appendedEvents, type AppendColumns } from './event-repo.js';
import { PgFaultError, type PgFaultCode } from './errors.js';
import type { SessionBounds } from './pg-state-store.js';

/** What the thread is started with: where the database is, the store's bounds, its nice value. */
export interface AppendSetup {
  /** Tells the thread apart (test/fixtures/thread-crash-preload.cjs). */
  readonly thread: 'pg-append';
  /** CONSOLE_DATABASE_URL. */
  readonly url: string;
  readonly connectTimeoutMs: number;
  readonly sessionBounds: SessionBounds;
  /** CONSOLE_EVENT_RETENTION. */
  readonly retention: number;
  /** CONSOLE_EVENT_APPEND_THREAD_NICE: 0 leaves the process's. */
  readonly nice: number;
}

/**
 * To the thread: an append (`columns` as event-repo.ts appendColumns makes them; `epoch`: the failed appends the main
 * thread had heard of when it sent it), a ping, or the end.
 */
export type AppendRequest =
  | { readonly seq: number; readonly epoch: number; readonly columns: AppendColumns; readonly retryAfter: number | null }
  | { readonly ping: number }
  | { readonly close: true };

/**
 * From the thread: its start (`seq` 0), each append's ids, error (`fault`: a fault of the database) or refusal unrun
 * (`skipped`: an append sent before it failed), each ping's answer.
 */
export type AppendReply =
  | { readonly seq: 0; readonly tid: number | null; readonly nice: number | null }
  /** `frames`: the stored events' frames (frames.ts packFrames), transferred; null when the thread could not make them. */
  | { readonly seq: number; readonly ids: (number | null)[]; readonly frames: ArrayBuffer | null }
  | { readonly seq: number; readonly skipped: true }
  | { readonly seq: number; readonly error: { readonly message: string; readonly fault: { readonly code: PgFaultCode; readonly pgCode: string } | null } }
  | { readonly pong: number };

/** The thread as the system status shows it (`database.eventWriter` in cluster mode). */
export interface AppendThreadStats {
  /** Its kernel thread id (Linux) and nice value, null where unknown or before it started. */
  readonly tid: number | null;
  readonly nice: number | null;
  /** Appends made there since start-up (failed ones included), and their events. */
  readonly appends: number;
  readonly rows: number;
  /** Its young generation's bound in force, MB (V8's default); null once it ended. */
  readonly youngGenerationMb: number | null;
}

/** A {@link SharedEventLog} whose appends run on the event append thread (see the module's comment). */
export class PgAppendThread implements SharedEventLog {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private seq = 0;
  /** Failed appends heard of (AppendRequest's `epoch`). */
  private epoch = 0;
  /** Appends may be sent while one runs: the thread runs them in order, none after a failed one (SharedEventLog.ordered). */
  readonly ordered = true;
  private readonly waiting = new Map<number, { resolve: (answer: { ids: (number | null)[]; frames: FrameBlock | null }) => void; reject: (err: Error) => void }>();
  private closing = false;
  private dead: Error | null = null;
  private info: { tid: number | null; nice: number | null } = { tid: null, nice: null };
  private appends = 0;
  private rows = 0;
  /** Pings the thread each tick: one unanswered past the limit (counted in ticks) is a hang. */
  private readonly answers: AnswerWatchdog;
  private readonly watchdog: NodeJS.Timeout;
  private ping = 0;
  private pong = 0;
  private started!: () => void;
  /** Resolves once the thread runs (its figures are known). */
  readonly ready: Promise<void> = new Promise((resolve) => (this.started = resolve));
  /** Resolves once the thread ended, asked or not. */
  readonly ended: Promise<void>;

  /**
   * @param workerFile the compiled append-task.js (WORKER_FILES.pgAppend). @param reads the store's event log: every
   * method but `append` is its. @param onDeath told once if the thread ends unasked, or leaves a ping unanswered past
   * `answerLimitMs` (ms; it is then terminated): events can no longer be stored (the service stops).
   * @throws Error when `workerFile` does not exist (not built).
   */
  constructor(
    workerFile: string,
    setup: Omit<AppendSetup, 'thread'>,
    private readonly reads: SharedEventLog,
    onDeath: (err: Error) => void,
    answerLimitMs = ANSWER_LIMIT_MS,
  ) {
    if (!fs.existsSync(workerFile)) throw new Error(`event append thread not found: ${workerFile} (run npm run build)`);
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    this.port.on('message', (m: AppendReply) => this.reply(m));
    this.worker = new Worker(workerFile, {
      workerData: { ...setup, thread: 'pg-append', port: port2 } satisfies AppendSetup & { port: MessagePort },
      transferList: [port2],
      name: 'event-append',
      // V8's young generation (48 MB on 64-bit), not the event writer thread's 8 MB: a batch's columns (up to 2,000
      // events, a few MB) then outlived the scavenges and went to full collections, which cost the process 1.4× the
      // CPU per event stored (bench/tools/line-cpu.ts in cluster mode).
    });
    const died = (err: unknown): void => {
      if (this.closing || this.dead !== null) return;
      // An error that cannot be cloned arrives as a plain object without its message.
      this.dead = err instanceof Error && err.message !== '' ? err : new Error(`the event append thread ended on an uncaught error (${inspect(err)})`);
      this.rejectAll(this.dead);
      onDeath(this.dead);
    };
    this.worker.on('error', died);
    this.worker.on('exit', (code) => {
      clearInterval(this.watchdog);
      died(new Error(`the event append thread ended (exit code ${code})`));
      this.rejectAll(new Error('the event append thread ended before its append'));
    });
    this.answers = new AnswerWatchdog(answerLimitMs);
    this.watchdog = setInterval(() => {
      if (this.closing || this.dead !== null) return;
      if (this.pong === this.ping) {
        this.port.postMessage({ ping: ++this.ping } satisfies AppendRequest);
        return;
      }
      if (!this.answers.tick(this.ping)) return;
      died(this.answers.hung('event append'));
      void this.worker.terminate();
    }, this.answers.tickMs).unref();
    this.ended = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  /**
   * Appends on the thread (SharedEventLog.append), after the appends sent before it. @throws (rejects) PgFaultError as
   * the store's append would; AppendNotRunError when one sent before it failed (nothing of it stored); Error once the
   * thread is dead.
   */
  async append(drafts: readonly SharedEventDraft[], retryAfter: number | null = null): Promise<(BusEvent | null)[]> {
    return (await this.appendFramed(drafts, retryAfter)).events;
  }

  /** {@link append} with the stored events' frames, made on the thread (SharedEventLog.appendFramed). @throws (rejects) as {@link append}. */
  async appendFramed(drafts: readonly SharedEventDraft[], retryAfter: number | null = null): Promise<FramedAppend> {
    if (drafts.length === 0) return { events: [], frames: null };
    if (this.dead !== null) throw this.dead;
    const seq = ++this.seq;
    this.appends++;
    this.rows += drafts.length;
    const answer = new Promise<{ ids: (number | null)[]; frames: FrameBlock | null }>((resolve, reject) => this.waiting.set(seq, { resolve, reject }));
    this.port.postMessage({ seq, epoch: this.epoch, columns: appendColumns(drafts), retryAfter } satisfies AppendRequest);
    const { ids, frames } = await answer;
    return { events: appendedEvents(drafts, ids), frames };
  }

  newSource(): Promise<number> {
    return this.reads.newSource();
  }

  after(...args: Parameters<SharedEventLog['after']>): ReturnType<SharedEventLog['after']> {
    return this.reads.after(...args);
  }

  newest(...args: Parameters<SharedEventLog['newest']>): ReturnType<SharedEventLog['newest']> {
    return this.reads.newest(...args);
  }

  lastId(): Promise<number> {
    return this.reads.lastId();
  }

  count(): Promise<number> {
    return this.reads.count();
  }

  stats(): AppendThreadStats {
    const young = this.worker.resourceLimits?.maxYoungGenerationSizeMb;
    return { ...this.info, appends: this.appends, rows: this.rows, youngGenerationMb: young === undefined ? null : young };
  }

  /** Ends the thread (its pool closed) once the appends under way were answered; call after the bus closed. */
  async close(): Promise<void> {
    clearInterval(this.watchdog);
    if (this.closing) return;
    while (this.waiting.size > 0 && this.dead === null) await new Promise((r) => setTimeout(r, 10));
    this.closing = true;
    this.port.postMessage({ close: true } satisfies AppendRequest);
    const timer = setTimeout(() => void this.worker.terminate(), 10_000);
    await this.ended;
    clearTimeout(timer);
    this.port.close();
  }

  private reply(m: AppendReply): void {
    if ('pong' in m) {
      this.pong = m.pong;
      return;
    }
    if (m.seq === 0) {
      const start = m as { tid: number | null; nice: number | null };
      this.info = { tid: start.tid, nice: start.nice };
      this.started();
      return;
    }
    const w = this.waiting.get(m.seq);
    if (w === undefined) return;
    this.waiting.delete(m.seq);
    if ('ids' in m) {
      w.resolve({ ids: m.ids, frames: m.frames === null ? null : unpackFrames(m.frames) });
      return;
    }
    if ('skipped' in m) {
      w.reject(new AppendNotRunError());
      return;
    }
    // Heard of before any later append is sent: those sent from now on run (the thread refuses the earlier ones).
    this.epoch++;
    const { message, fault } = (m as Extract<AppendReply, { error: unknown }>).error;
    // As the store's own append would throw it: the bus and the HTTP catalogue map it alike.
    w.reject(fault === null ? new Error(message) : new PgFaultError(fault.code, message, new Error(message), fault.pgCode));
  }

  private rejectAll(err: Error): void {
    const waiting = [...this.waiting.values()];
    this.waiting.clear();
    for (const w of waiting) w.reject(err);
  }
}
