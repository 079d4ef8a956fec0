/**
 * The event writer thread (event-writer-task.ts), the main thread's side: the bus's appends of queued events (jobs'
 * lines the most) are written there, on a connection of its own, so the SQLite inserts leave the main thread. The
 * main thread still plans each append (ids, segments: event-log.ts), one at a time, and delivers it once its reply
 * came. Before its own connection writes, the main thread waits for the append on the thread (idle, a promise; drain,
 * blocking, is left for a flush that finds one under way): the two never write at once, and ids commit in order.
 */
import fs from 'node:fs';
import { inspect } from 'node:util';
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { type FrameBlock, unpackFrames } from '../../bus/frames.js';
import Database from './binding.js';
import type { AppendOutcome, AppendPlan } from './event-append.js';
import type { WireRows } from './append-wire.js';
import type { AppendWriter } from './event-log.js';
import { ANSWER_LIMIT_MS, AnswerWatchdog } from '../../process/answer-watchdog.js';

/** What the thread is started with: the state database (migrated already) and its nice value. */
export interface WriterSetup {
  readonly file: string;
  /** CONSOLE_EVENT_WRITER_THREAD_NICE: 0 leaves the process's. */
  readonly nice: number;
}

/** The thread's replies: its start (`seq` 0), then each append's outcome or error. */
export type WriterReply =
  | { readonly seq: 0; readonly tid: number | null; readonly nice: number | null }
  /** `frames`: the rows' frames, in the shared buffer (`shared`), transferred when too large for it, or none (null: made here). */
  | { readonly seq: number; readonly outcome: AppendOutcome; readonly frames: ArrayBuffer | 'shared' | null }
  | { readonly seq: number; readonly error: { readonly message: string; readonly code: string | null } };

/** The thread as the system status shows it (`database.eventWriter`). */
export interface EventWriterStats {
  /** Its kernel thread id (Linux) and nice value, null where unknown or before it started. */
  readonly tid: number | null;
  readonly nice: number | null;
  /** Appends written there since start-up, and their rows. */
  readonly appends: number;
  readonly rows: number;
  /** Times the main thread waited (blocking) for an append there before its own connection wrote, and how long in all, ms. */
  readonly waits: number;
  readonly waitedMs: number;
  /** Times a console write or transaction waited for an append there without blocking the main thread, and how long in all, ms. */
  readonly idleWaits: number;
  readonly idleWaitedMs: number;
  /** Its young generation's bound in force, MB (8; null once it ended). */
  readonly youngGenerationMb: number | null;
}

/** The thread's young generation, MB: its objects (each append's rows) live milliseconds, and V8's default let it
 * grow during a storm and stay in the service's memory afterwards (P6), as the job I/O thread's did. */
const YOUNG_GENERATION_MB = 8;

/** Bytes of the buffer shared with the thread for each append's frames: a batch of lines fits (512 of them, about 150 KB in
 * P7); a larger one's frames are transferred in a buffer of their own. */
const SHARED_FRAMES_BYTES = 2 * 1048576;

/**
 * An append's end: its outcome and the rows' frames (frames.ts packEventFrames, made there), or the database's error.
 * The frames may be views of the buffer shared with the thread: read them in `done`, before the next append.
 */
type Done = (outcome: AppendOutcome | null, err: Error | null, frames?: FrameBlock) => void;

/** The event writer thread (see the module's comment). */
export class EventWriter implements AppendWriter {
  private readonly worker: Worker;
  private readonly port: MessagePort;
  private readonly done: Int32Array;
  /** The thread writes each append's frames here (see SHARED_FRAMES_BYTES). */
  private readonly frames = new SharedArrayBuffer(SHARED_FRAMES_BYTES);
  private seq = 0;
  private waiting: Done | null = null;
  private readingFrames = false;
  private closing = false;
  /** Counts the ticks the append on the thread has gone unanswered (answer-watchdog.ts). */
  private readonly answers: AnswerWatchdog;
  /** Set once an append was not answered within the limit: the thread was terminated for it. */
  private hung: Error | null = null;
  /** Looks for an append not answered within the limit, even with nobody waiting for it. */
  private readonly watchdog: NodeJS.Timeout;
  /** Tells the owner of the thread's death, once (the constructor's `onDeath`). */
  private readonly reportDeath: (err: Error) => void;
  private info: { tid: number | null; nice: number | null } = { tid: null, nice: null };
  private appends = 0;
  private rows = 0;
  private waits = 0;
  private waitedMs = 0;
  private idleWaits = 0;
  private idleWaitedMs = 0;
  /** Told once no append is on the thread (see {@link idle}). */
  private idleWaiters: { resolve: () => void; reject: (err: Error) => void }[] = [];
  private started!: () => void;
  /** Resolves once the thread opened its connection and set its nice value (its figures are known). */
  readonly ready: Promise<void> = new Promise((resolve) => (this.started = resolve));
  /** Resolves once the thread ended, asked or not. */
  readonly ended: Promise<void>;

  /**
   * @param workerFile the compiled event-writer-task.js (WORKER_FILES.eventWriter).
   * @param onDeath told once if the thread ends unasked, or hangs (an append not answered within `answerLimitMs`,
   * ms: it is then terminated): appends can no longer be stored (the service stops).
   * @throws Error when `workerFile` does not exist (not built).
   */
  constructor(workerFile: string, setup: WriterSetup, onDeath: (err: Error) => void, answerLimitMs = ANSWER_LIMIT_MS) {
    if (!fs.existsSync(workerFile)) throw new Error(`event writer not found: ${workerFile} (run npm run build)`);
    const { port1, port2 } = new MessageChannel();
    // Word 0: the last append written; word 1: set once the thread ended (event-writer-task.ts).
    const shared = new SharedArrayBuffer(8);
    this.done = new Int32Array(shared);
    this.port = port1;
    this.port.on('message', (m: WriterReply) => this.reply(m));
    this.worker = new Worker(workerFile, {
      workerData: { ...setup, port: port2, done: shared, frames: this.frames },
      transferList: [port2],
      name: 'event-writer',
      resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
    });
    let dead = false;
    const died = (err: unknown): void => {
      if (this.closing || dead) return;
      dead = true;
      // An error that cannot be cloned (a DOMException) arrives as a plain object without its message.
      onDeath(err instanceof Error && err.message !== '' ? err : new Error(`the event writer thread ended on an uncaught error (${inspect(err)})`));
    };
    this.worker.on('error', died);
    this.worker.on('exit', (code) => {
      clearInterval(this.watchdog);
      this.rejectWaiters(new Error('the event writer thread ended before its append'));
      died(new Error(`the event writer thread ended (exit code ${code})`));
    });
    this.reportDeath = died;
    this.answers = new AnswerWatchdog(answerLimitMs);
    this.watchdog = setInterval(() => this.checkAnswer(), this.answers.tickMs).unref();
    this.ended = new Promise((resolve) => this.worker.once('exit', () => resolve()));
  }

  get busy(): boolean {
    return this.waiting !== null;
  }

  /** The last append's `done` is running with its frames in the buffer shared with the thread: no append may start (AppendWriter). */
  get reading(): boolean {
    return this.readingFrames;
  }

  /**
   * @throws Error when an append is on the thread already, or the last one's `done` is still running with frames in the
   * shared buffer (a publish inside it must not start the next append: the thread would write them again as they are
   * read), or the thread was taken for dead (its hang's error).
   */
  submit(plan: AppendPlan, rows: WireRows, done: Done): void {
    if (this.hung !== null) throw this.hung;
    if (this.waiting !== null) throw new Error('event writer: an append is already on the thread');
    if (this.readingFrames) throw new Error('event writer: the last append’s frames are being read');
    this.waiting = done;
    this.seq = (this.seq % 0x7fff_ffff) + 1;
    this.appends++;
    this.rows += rows.ids.length;
    this.port.postMessage({ seq: this.seq, plan, rows });
  }

  /** @throws Error when the thread ended, or did not answer its append within the limit (taken for dead): its death ends the service. */
  drain(): void {
    if (this.waiting === null) return;
    const started = performance.now();
    this.waits++;
    for (;;) {
      if (this.hung !== null) throw this.hung;
      const at = Atomics.load(this.done, 0);
      if (at === this.seq) break;
      if (Atomics.load(this.done, 1) === 1) throw new Error('the event writer thread ended before its append');
      Atomics.wait(this.done, 0, at, this.answers.tickMs);
      this.checkAnswer();
    }
    this.waitedMs += performance.now() - started;
    // Its reply was posted before the word was stored: it is on the port now.
    for (let m = receiveMessageOnPort(this.port); m !== undefined; m = receiveMessageOnPort(this.port)) this.reply(m.message as WriterReply);
  }

  /**
   * Resolves once no append is on the thread and its `done` ran (at once when none is), without blocking the main
   * thread: what a console write waits for before its connection writes (EventLog.quiesce).
   * @throws (rejects) Error when the thread ended, or did not answer its append within the limit (taken for dead: the
   * watchdog terminates it, which rejects the waiters).
   */
  idle(): Promise<void> {
    if (this.hung !== null) return Promise.reject(this.hung);
    if (this.waiting === null) return Promise.resolve();
    const started = performance.now();
    this.idleWaits++;
    return new Promise<void>((resolve, reject) => {
      const end = (): void => {
        this.idleWaitedMs += performance.now() - started;
      };
      this.idleWaiters.push({
        resolve: () => {
          end();
          resolve();
        },
        reject: (err) => {
          end();
          reject(err);
        },
      });
    });
  }

  stats(): EventWriterStats {
    const young = this.worker.resourceLimits?.maxYoungGenerationSizeMb;
    return {
      ...this.info,
      appends: this.appends,
      rows: this.rows,
      waits: this.waits,
      waitedMs: Math.round(this.waitedMs),
      idleWaits: this.idleWaits,
      idleWaitedMs: Math.round(this.idleWaitedMs),
      youngGenerationMb: young === undefined ? null : young,
    };
  }

  /**
   * The watchdog's tick (and a blocking wait's): an append unanswered past the limit (in ticks: a pause of the process
   * counts once) terminates the thread, reported as its death.
   */
  private checkAnswer(): void {
    if (this.waiting === null || this.closing || this.hung !== null) return;
    // Answered: its reply is on the port (posted before the word was stored).
    if (Atomics.load(this.done, 0) === this.seq) return;
    if (!this.answers.tick(this.seq)) return;
    this.hung = this.answers.hung('event writer');
    // Told now, not on its exit: a thread stuck in a native call may never end.
    this.rejectWaiters(this.hung);
    this.reportDeath(this.hung);
    void this.worker.terminate();
  }

  private rejectWaiters(err: Error): void {
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w.reject(err);
  }

  /** Waits for the append there, then ends the thread (its connection closed). */
  async close(): Promise<void> {
    clearInterval(this.watchdog);
    if (this.closing) return;
    try {
      this.drain();
    } catch {}
    this.closing = true;
    this.port.postMessage({ close: true });
    const timer = setTimeout(() => void this.worker.terminate(), 10_000);
    await this.ended;
    clearTimeout(timer);
    this.port.close();
  }

  private reply(m: WriterReply): void {
    if (m.seq === 0) {
      const start = m as { tid: number | null; nice: number | null };
      this.info = { tid: start.tid, nice: start.nice };
      this.started();
      return;
    }
    const done = this.waiting;
    if (done === null || m.seq !== this.seq) return;
    this.waiting = null;
    try {
      if ('outcome' in m) {
        this.readingFrames = m.frames === 'shared';
        done(m.outcome, null, m.frames === null ? undefined : unpackFrames(m.frames === 'shared' ? this.frames : m.frames));
        return;
      }
      const { message, code } = (m as { error: { message: string; code: string | null } }).error;
      // As the database's own error on this thread: its faults map alike (errors.ts stateDbFault).
      done(null, code === null ? new Error(message) : new Database.SqliteError(message, code));
    } finally {
      this.readingFrames = false;
      // `done` may have submitted the next append (not with shared frames): the waiters then wait for that one.
      if (this.waiting === null && this.idleWaiters.length > 0) {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w.resolve();
      }
    }
  }
}
