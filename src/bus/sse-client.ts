// One Server-Sent Events stream (api-decisions.md, "Event stream"): its `retry:` line, its replay after
// `Last-Event-ID` (memory first, then the database a few streams at a time), then live frames held meanwhile.
import type { ServerResponse } from 'node:http';
import { passes, type EventFilter } from './event.js';
import { frameOf, type StoredFrames } from './frames.js';
import type { EventRow } from './local-event-log.js';
import type { RecentEvents } from './recent-events.js';
import type { ReplayCache } from './replay-cache.js';
import type { Config } from '../config/config.js';

/** Rows per replay page: bounds the synchronous database read per step. */
const REPLAY_PAGE = 500;

/** The streams' settings: the configuration's `sse` (CONSOLE_SSE_*). */
export type SseOptions = Config['sse'];

/** The answer's headers, for a stream and for a HEAD. */
export const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
} as const;

/** Why a client went away, for logs and metrics. */
export type SseCloseReason = 'client' | 'slow' | 'shutdown';

/** At most `max` holders at once; the others wait in order (replays that read the database). */
export class Turns {
  busy = 0;
  private readonly queue: (() => void)[] = [];
  constructor(private readonly max: number) {}

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves once a turn is free; call the function it resolves to when done (calls after the first do nothing). */
  async take(): Promise<() => void> {
    if (this.busy >= this.max) await new Promise<void>((r) => this.queue.push(r));
    else this.busy++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.queue.shift();
      if (next) next();
      else this.busy--;
    };
  }
}

/** One open stream, owned by the hub (sse.ts), which hands it each batch's frames for its filter. */
export class SseClient {
  private replaying = true;
  private held: Buffer[] = [];
  private heldBytes = 0;
  /** The newest id among the held frames. */
  private heldLastId = 0;
  private closed = false;
  /** Ids at or below this are never sent (0: none): a client resumed from an id this instance has not
   * delivered yet (cluster mode), so the live events up to it are ones the client has. */
  private floor = 0;
  /** While replaying, the newest id the replay reads to: raised when held live frames are given up (receive). */
  private replayTo = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly fromLog: ReplayCache,
    private readonly recent: RecentEvents,
    private readonly replays: Turns,
    readonly filter: EventFilter,
    private readonly options: SseOptions,
    private readonly onClose: (reason: SseCloseReason) => void,
    /** Counts replayed frames (live ones are counted by the hub). */
    private readonly onReplayed: (events: number) => void,
  ) {}

  /** @param headId the newest id when it joined the live set: older ones are replayed. */
  start(sinceId: number | null, headId: number): void {
    const { res } = this;
    res.writeHead(200, STREAM_HEADERS);
    res.socket?.setNoDelay(true);
    res.write(`retry: ${this.options.retryMs}\n\n`);
    res.on('close', () => this.close('client'));
    if (sinceId === null || sinceId >= headId) {
      if (sinceId !== null && sinceId > headId) this.floor = sinceId;
      this.goLive();
      return;
    }
    this.replayTo = headId;
    this.replay(sinceId).catch(() => this.close('client'));
  }

  /**
   * Writes stored events after `sinceId` up to {@link replayTo} page by page, honouring back-pressure and
   * yielding between pages, then goes live. Database pages take a turn, so a burst of resumes reads a few at a
   * time; the turn is given up while the socket drains (a stalled client would hold it for ever).
   */
  private async replay(sinceId: number): Promise<void> {
    let cursor = sinceId;
    let turn: (() => void) | null = null;
    try {
      while (!this.closed) {
        const upTo = this.replayTo;
        // From memory while the resume point is recent enough; the database's pages are the same.
        let page: StoredFrames | null = this.recent.framesAfter(cursor, REPLAY_PAGE, this.filter, upTo);
        if (page === null) {
          turn ??= await this.replays.take();
          if (this.closed) break;
          page = await this.fromLog.framesAfter(cursor, REPLAY_PAGE, this.filter, upTo);
        }
        if (page.count > 0) {
          cursor = page.lastId;
          this.onReplayed(page.count);
          if (!this.res.write(page.frames)) {
            turn?.();
            turn = null;
            await this.drained();
          }
        }
        if (page.count < REPLAY_PAGE) {
          // Everything up to `upTo` is sent; live frames given up meanwhile are read next, then the held ones follow.
          cursor = upTo;
          if (this.replayTo === upTo) {
            // The held frames join what the socket still holds of the last page. Past the bound together, they
            // are given up and read next, page by page, rather than drop a client that is reading.
            if (this.heldBytes === 0 || this.res.writableLength + this.heldBytes <= this.options.maxQueueBytes) break;
            this.giveUpHeld(this.heldLastId);
          }
        }
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      turn?.();
    }
    this.goLive();
  }

  /** Resolves on `drain` or `close`, removing both listeners either way (no leak per page; no AbortSignal, whose abort builds an error). */
  private drained(): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  private goLive(): void {
    if (this.closed) return;
    this.replaying = false;
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (held.length > 0) this.write(held);
  }

  /** Bytes this client has not been sent yet: the socket's queue, and what is held during its replay. */
  get queued(): number {
    return this.closed ? 0 : this.res.writableLength + this.heldBytes;
  }

  /**
   * @param chunks the frames for this client's filter: slices of the batch's one encoding.
   * @param batch the stored rows they were made of, ids ascending.
   */
  receive(chunks: readonly Buffer[], batch: readonly EventRow[]): void {
    if (this.closed) return;
    if (this.floor > 0) {
      // Rare (a resume ahead of this instance's head): the shared frames are cut for this client.
      const floor = this.floor;
      if ((batch[batch.length - 1] as EventRow).id <= floor) return;
      this.floor = 0;
      if ((batch[0] as EventRow).id <= floor) {
        let text = '';
        for (const r of batch) if (r.id > floor && passes(this.filter, r.severity, r.scope, r.proposalId ?? null)) text += frameOf(r);
        if (text === '') return;
        chunks = [Buffer.from(text, 'utf8')];
      }
    }
    if (this.replaying) {
      let bytes = this.heldBytes;
      for (const c of chunks) bytes += c.length;
      if (bytes > this.options.maxQueueBytes) {
        // Past the bound, the held frames are given up and the replay reads them from the log instead: memory
        // stays bounded, and a client that reads slower than a flood is not dropped and made to start again.
        this.giveUpHeld((batch[batch.length - 1] as EventRow).id);
        return;
      }
      for (const c of chunks) this.held.push(c);
      this.heldBytes = bytes;
      this.heldLastId = (batch[batch.length - 1] as EventRow).id;
      return;
    }
    this.write(chunks);
  }

  /** Drops the held frames: the replay reads every event up to `lastId` (the newest given up) instead. */
  private giveUpHeld(lastId: number): void {
    this.held = [];
    this.heldBytes = 0;
    this.replayTo = lastId;
  }

  ping(): void {
    if (!this.closed && !this.replaying) this.write(': ping\n\n');
  }

  /** Writes (several slices as one writev: nothing copied), then checks this client's queue. */
  private write(chunk: string | readonly Buffer[]): void {
    if (typeof chunk === 'string' || chunk.length === 1) this.res.write(typeof chunk === 'string' ? chunk : (chunk[0] as Buffer));
    else {
      this.res.cork();
      for (const c of chunk) this.res.write(c);
      this.res.uncork();
    }
    // Node buffers what the socket has not taken; that buffer is this client's queue.
    if (this.res.writableLength > this.options.maxQueueBytes) this.close('slow');
  }

  close(reason: SseCloseReason): void {
    if (this.closed) return;
    this.closed = true;
    this.held = [];
    if (reason === 'slow') this.res.destroy();
    else if (!this.res.writableEnded) this.res.end();
    this.onClose(reason);
  }
}
