/**
 * Stream replays' database reads on a thread of their own (api-decisions.md, "Event stream"): the frames of stored
 * events are made and packed into one buffer there (replay-task.ts), and handed over as bytes, transferred. Under a
 * generation storm the streams that fall behind replay the log continuously; on the main thread those reads took
 * a fifth of its time, beside the console's reads (bench P7 at full speed).
 */
import fs from 'node:fs';
import { Piscina } from 'piscina';
import { unpackFrames, type FrameBlock } from '../../bus/frames.js';
import { HangWatch } from '../../process/hang-watch.js';
import { NO_REQUIRE_ESM } from '../../workers/pool.js';
import type { ReplayTask, ReplayThreadInfo } from './replay-task.js';

export type { ReplayThreadInfo } from './replay-task.js';

/** The segment tables holding ids in `(sinceId, upTo]`, oldest first (EventLog.segmentTables). */
export type SegmentTables = (sinceId: number, upTo: number) => readonly string[];

/** The replay thread (one worker thread) and the reads it made or could not make. */
export class ReplayThread {
  private readonly pool: Piscina;
  private closing = false;
  private info: ReplayThreadInfo = { tid: null, nice: null };
  private readonly watch: HangWatch;

  /**
   * @param workerFile the compiled replay-task.js (WORKER_FILES.replay); @param dbFile the state database.
   * @param onError told of each read the thread could not make (the caller then reads on the main thread), one not
   * answered within `answerLimitMs` (ms, CONSOLE_THREAD_ANSWER_LIMIT_MS; hang-watch.ts) included: the thread is then
   * replaced.
   * @throws Error when `workerFile` does not exist (not built).
   */
  constructor(
    workerFile: string,
    private readonly dbFile: string,
    private readonly tables: SegmentTables,
    private readonly onError: (err: Error) => void,
    /** CONSOLE_SSE_REPLAY_THREAD_NICE. */
    private readonly nice = 0,
    answerLimitMs?: number,
  ) {
    if (!fs.existsSync(workerFile)) throw new Error(`replay worker not found: ${workerFile} (run npm run build)`);
    // One thread: replays share blocks (bus/replay-cache.ts), so reads are few; a second would compete with the main thread.
    this.pool = new Piscina({ filename: workerFile, minThreads: 1, maxThreads: 1, idleTimeout: Infinity, execArgv: NO_REQUIRE_ESM });
    // A worker's death outside a task would end the service; Piscina replaces it, and the read is made on the main thread.
    this.pool.on('error', (err: Error) => this.failed(err));
    this.watch = new HangWatch('replay', () => {}, answerLimitMs);
  }

  /**
   * Stored events with `sinceId < id <= upTo` (every one of them committed), at most `limit`, as one block of frames.
   * Never rejects: resolves null when the thread failed (a segment dropped meanwhile, the thread died).
   */
  readonly read = async (sinceId: number, limit: number, upTo: number): Promise<FrameBlock | null> => {
    const task: ReplayTask = { file: this.dbFile, nice: this.nice, tables: this.tables(sinceId, upTo), sinceId, limit, upTo };
    try {
      return unpackFrames((await this.watch.run((signal) => this.pool.run(task, { signal }))) as ArrayBuffer);
    } catch (err) {
      this.failed(reasonOf(err, 'the replay thread failed'));
      return null;
    }
  };

  /**
   * Sets the thread's nice value and opens its connection before the first replay (its descriptors are the
   * service's from start-up on). Never rejects: a failure is reported, and the first read opens it again.
   */
  async open(): Promise<void> {
    try {
      this.info = (await this.watch.run((signal) => this.pool.run({ file: this.dbFile, nice: this.nice }, { name: 'start', signal }))) as ReplayThreadInfo;
    } catch (err) {
      this.failed(reasonOf(err, 'the replay thread failed to start'));
    }
  }

  /** Its kernel thread id and nice value once {@link open}ed (null where unknown). */
  stats(): ReplayThreadInfo {
    return this.info;
  }

  /** Ends the thread; reads under way resolve null. */
  async close(): Promise<void> {
    this.closing = true;
    await this.pool.destroy();
  }

  private failed(err: Error): void {
    if (!this.closing) this.onError(err);
  }
}

/** The error a failed read is reported with: an abort's reason (the hang, hang-watch.ts) rather than Piscina's AbortError. */
function reasonOf(err: unknown, what: string): Error {
  const cause = err instanceof Error && err.name === 'AbortError' ? err.cause : undefined;
  if (cause instanceof Error) return cause;
  return err instanceof Error ? err : new Error(`${what}: ${JSON.stringify(err)}`);
}
