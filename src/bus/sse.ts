/**
 * Server-Sent Events delivery of bus events (api-decisions.md, "Event stream").
 *
 * Each client first gets a `retry:` line, then, when it resumes (`Last-Event-ID` or
 * `sinceId`), every stored event after that id in pages from the database, then live
 * frames. Live frames that arrive during the replay are held and written after it, so there
 * is no gap and no duplicate. A client whose unsent bytes pass the configured bound is
 * disconnected: the bus and the other clients never wait for it, and it can resume.
 */
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Bus } from './bus.js';
import { filterKey, passes, type EventFilter } from './event.js';
import type { EventRow } from './event-store.js';
import { RecentEvents, type RecentEventsStats } from './recent-events.js';

/** Rows per replay page: bounds the synchronous database read done per step. */
const REPLAY_PAGE = 500;

export interface SseOptions {
  readonly heartbeatMs: number;
  readonly maxQueueBytes: number;
  readonly retryMs: number;
  /** CONSOLE_SSE_REPLAY_MEMORY_BYTES: the newest events kept in memory for replays (0: none). */
  readonly replayMemoryBytes: number;
}

/** The headers of every stream answer (and of the answer to HEAD). */
const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
} as const;

/** Why a client went away, for logs and metrics. */
export type SseCloseReason = 'client' | 'slow' | 'shutdown';

/** The frame of one stored event (`id: …\ndata: …\n\n`); the replay memory writes the same bytes. */
const frameOf = (r: EventRow): string => `id: ${r.id}\ndata: ${r.data}\n\n`;

/** A replay page read from the database, framed (`sinceId` is the cursor it was read after). */
function framesOf(rows: readonly EventRow[], sinceId: number): { frames: string; count: number; lastId: number } {
  let frames = '';
  for (const r of rows) frames += frameOf(r);
  return { frames, count: rows.length, lastId: rows.length > 0 ? (rows[rows.length - 1] as EventRow).id : sinceId };
}

const isEverything = (f: EventFilter): boolean => f.severities === null && f.scopePrefix === null && f.proposalId == null;

/**
 * Owns every open stream: the one bus subscription they share, one heartbeat timer for all,
 * counts, and shutdown. Each flush of the bus is framed once per distinct filter: one shared
 * buffer written as is to every client with that filter.
 */
export class SseHub {
  /** Clients receiving live frames (a client joins once its replay point is fixed). */
  private readonly live = new Set<SseClient>();
  private readonly clients = new Set<SseClient>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private droppedSlow = 0;
  /** Event frames handed to clients, live and replayed (one per event per client). */
  private deliveredFrames = 0;
  /** The newest stored events, which replays read before the database. */
  private readonly recent: RecentEvents;

  /** @param retention CONSOLE_EVENT_RETENTION: no more events than the database keeps are replayed from memory. */
  constructor(
    private readonly bus: Bus,
    private readonly options: SseOptions,
    retention: number,
  ) {
    this.heartbeat = setInterval(() => {
      for (const c of this.clients) c.ping();
    }, options.heartbeatMs);
    this.heartbeat.unref();
    const sub = bus.subscribe((batch) => this.fanOut(batch));
    this.unsubscribe = sub.unsubscribe;
    this.recent = new RecentEvents(options.replayMemoryBytes, retention, sub.headId);
  }

  private fanOut(batch: readonly EventRow[]): void {
    this.recent.add(batch);
    if (this.live.size === 0) return;
    const byFilter = new Map<string, Buffer>();
    // How many events each filter's buffer holds (for the delivered count).
    const counts = new Map<string, number>();
    // Frames of this batch, built on first use and shared by every filter.
    const frames: (string | undefined)[] = new Array(batch.length);
    for (const client of this.live) {
      const key = filterKey(client.filter);
      let buf = byFilter.get(key);
      if (buf === undefined) {
        // Without a filter, the bytes the replay memory has just written (each event encoded once).
        buf = isEverything(client.filter) ? this.recent.lastFrames() ?? undefined : undefined;
        let n = batch.length;
        if (buf === undefined) {
          let text = '';
          n = 0;
          for (let i = 0; i < batch.length; i++) {
            const r = batch[i] as EventRow;
            if (passes(client.filter, r.severity, r.scope, r.proposalId ?? null)) {
              text += frames[i] ??= frameOf(r);
              n++;
            }
          }
          buf = Buffer.from(text, 'utf8');
        }
        byFilter.set(key, buf);
        counts.set(key, n);
      }
      if (buf.length > 0) {
        client.receive(buf, batch);
        this.deliveredFrames += counts.get(key) as number;
      }
    }
  }

  /**
   * Starts a stream on `res` (headers are written here). A HEAD request gets the stream's
   * headers and no body at once, and is not a subscriber (issue 10, item 7): Node writes no
   * body for HEAD, so an endless stream would hold it forever without sending even the headers.
   * @param sinceId resume point: events with a greater id are replayed first; null for live only.
   */
  open(res: ServerResponse, filter: EventFilter, sinceId: number | null): void {
    if (res.req.method === 'HEAD') {
      res.writeHead(200, STREAM_HEADERS);
      res.end();
      return;
    }
    const client = new SseClient(res, this.bus, this.recent, filter, this.options, (reason) => {
      this.clients.delete(client);
      this.live.delete(client);
      if (reason === 'slow') this.droppedSlow++;
    }, (n) => (this.deliveredFrames += n));
    this.clients.add(client);
    // Everything published before is flushed first (stored, and framed for the clients before
    // it): this client receives exactly the events after headId live, and replays the others.
    const headId = this.bus.flushedHead();
    this.live.add(client);
    client.start(sinceId, headId);
  }

  /** Number of open streams. */
  get size(): number {
    return this.clients.size;
  }

  /** The replay memory's figures (system status `bus.replay`). */
  replayStats(): RecentEventsStats {
    return this.recent.stats();
  }

  /** Streams disconnected because they could not keep up. */
  get slowDrops(): number {
    return this.droppedSlow;
  }

  /**
   * Event frames handed to stream clients since start-up, live and replayed: one per event per
   * client (the figure "events delivered" of the history and `console_sse_events_delivered_total`).
   */
  get delivered(): number {
    return this.deliveredFrames;
  }

  /** Ends every stream (after a final flush of the bus), e.g. on shutdown. */
  closeAll(): void {
    this.bus.flush();
    for (const c of [...this.clients]) c.close('shutdown');
    clearInterval(this.heartbeat);
    this.unsubscribe();
  }
}

class SseClient {
  private replaying = true;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private closed = false;
  /**
   * Ids at or below this are never sent (0: no floor). Set when a client resumes from an id this
   * instance has not delivered yet (cluster mode: another instance delivered further, or this
   * one's head trails after an outage): the live events up to it are ones the client has.
   */
  private floor = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly bus: Bus,
    private readonly recent: RecentEvents,
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
    this.replay(sinceId, headId).catch(() => this.close('client'));
  }

  /** Writes stored events in (sinceId, headId], page by page, honouring socket back-pressure. */
  private async replay(sinceId: number, headId: number): Promise<void> {
    let cursor = sinceId;
    while (!this.closed) {
      // From memory while the resume point is recent enough; the database's pages are the same.
      const page = this.recent.framesAfter(cursor, REPLAY_PAGE, this.filter, headId) ?? framesOf(await this.bus.readAfter(cursor, REPLAY_PAGE, this.filter, headId), cursor);
      if (page.count > 0) {
        cursor = page.lastId;
        this.onReplayed(page.count);
        if (!this.res.write(page.frames)) await this.drained();
      }
      if (page.count < REPLAY_PAGE) break;
    }
    this.goLive();
  }

  /** Resolves on `drain` or `close`, removing both listeners either way (no leak per page). */
  private async drained(): Promise<void> {
    const ac = new AbortController();
    try {
      await Promise.race([once(this.res, 'drain', { signal: ac.signal }), once(this.res, 'close', { signal: ac.signal })]);
    } finally {
      ac.abort();
    }
  }

  private goLive(): void {
    if (this.closed) return;
    this.replaying = false;
    const held = this.held;
    this.held = [];
    this.heldBytes = 0;
    if (held.length > 0) this.write(held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held));
  }

  /** @param batch the stored rows `frames` were made of (this client's filter applied), ids ascending. */
  receive(frames: Buffer, batch: readonly EventRow[]): void {
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
        frames = Buffer.from(text, 'utf8');
      }
    }
    if (this.replaying) {
      this.held.push(frames);
      this.heldBytes += frames.length;
      if (this.heldBytes > this.options.maxQueueBytes) this.close('slow');
      return;
    }
    this.write(frames);
  }

  ping(): void {
    if (!this.closed && !this.replaying) this.write(': ping\n\n');
  }

  private write(chunk: Buffer | string): void {
    this.res.write(chunk);
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
