// Server-Sent Events delivery of bus events (api-decisions.md, "Event stream"): a
// `retry:` line, a replay after `Last-Event-ID`, then live frames (held during the replay: no gap, no duplicate).
// A client past its queue bound is dropped (it can resume), so the bus never waits for one.
import { once } from 'node:events';
import type { ServerResponse } from 'node:http';
import type { Bus } from './bus.js';
import { filterKey, passes, type EventFilter } from './event.js';
import type { EventRow } from './local-event-log.js';
import { RecentEvents, type RecentEventsStats } from './recent-events.js';
import type { Config } from '../config/config.js';

/** Rows per replay page: bounds the synchronous database read per step. */
const REPLAY_PAGE = 500;

/** The streams' settings: the configuration's `sse` (CONSOLE_SSE_*). */
export type SseOptions = Config['sse'];

/** Why a stream is refused before it opens (SseHub.admit): the bound in all, or the address's. */
export type SseRefusal = { readonly kind: 'total'; readonly max: number } | { readonly kind: 'address'; readonly max: number; readonly address: string };

/** The streams' figures (system status `bus.streams`). */
export interface SseStreamStats {
  readonly open: number;
  readonly maxStreams: number;
  readonly maxStreamsPerAddress: number;
  /** Streams refused since start-up: at the bound in all, and at an address's. */
  readonly refusedTotal: number;
  readonly refusedPerAddress: number;
  /** Bytes queued for all clients now (counted per client), and the bound. */
  readonly queuedBytes: number;
  readonly totalQueueBytes: number;
  /** Clients dropped to keep the total under its bound. */
  readonly droppedOverTotal: number;
  /** Replays reading the database now, and waiting their turn. */
  readonly databaseReplays: number;
  readonly databaseReplaysWaiting: number;
}

const STREAM_HEADERS = {
  'Content-Type': 'text/event-stream',
  'Cache-Control': 'no-cache',
  'X-Accel-Buffering': 'no',
  Connection: 'keep-alive',
} as const;

/** Why a client went away, for logs and metrics. */
export type SseCloseReason = 'client' | 'slow' | 'shutdown';

/** One stored event's frame; the replay memory writes the same bytes. */
const frameOf = (r: EventRow): string => `id: ${r.id}\ndata: ${r.data}\n\n`;

/** A replay page read from the database, framed (`sinceId` is the cursor it was read after). */
function framesOf(rows: readonly EventRow[], sinceId: number): { frames: string; count: number; lastId: number } {
  let frames = '';
  for (const r of rows) frames += frameOf(r);
  return { frames, count: rows.length, lastId: rows.length > 0 ? (rows[rows.length - 1] as EventRow).id : sinceId };
}

const isEverything = (f: EventFilter): boolean => f.severities === null && f.scopePrefix === null && f.proposalId == null;

/** Owns every open stream: one shared bus subscription and heartbeat, counts, shutdown; each batch is framed once per filter. */
export class SseHub {
  /** Clients receiving live frames (a client joins once its replay point is fixed). */
  private readonly live = new Set<SseClient>();
  private readonly clients = new Set<SseClient>();
  private readonly heartbeat: NodeJS.Timeout;
  private readonly unsubscribe: () => void;
  private droppedSlow = 0;
  private droppedOverTotal = 0;
  private refusedTotal = 0;
  private refusedPerAddress = 0;
  private readonly perAddress = new Map<string, number>();
  private readonly replays: Turns;
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
    this.replays = new Turns(options.maxDatabaseReplays);
    const sub = bus.subscribe((batch) => this.fanOut(batch));
    this.unsubscribe = sub.unsubscribe;
    this.recent = new RecentEvents(options.replayMemoryBytes, retention, sub.headId);
  }

  private fanOut(batch: readonly EventRow[]): void {
    this.recent.add(batch);
    if (this.live.size === 0) return;
    // Encoded once for every client (the replay memory's bytes when kept); each filter gets slices, never a copy.
    let shared: Buffer | undefined;
    let ends: readonly number[] = [];
    const byFilter = new Map<string, { readonly chunks: readonly Buffer[]; readonly count: number }>();
    for (const client of this.live) {
      const key = filterKey(client.filter);
      let out = byFilter.get(key);
      if (out === undefined) {
        if (shared === undefined) ({ shared, ends } = this.encode(batch));
        out = isEverything(client.filter) ? { chunks: [shared], count: batch.length } : slicesFor(client.filter, batch, shared, ends);
        byFilter.set(key, out);
      }
      if (out.count > 0) {
        client.receive(out.chunks, batch);
        this.deliveredFrames += out.count;
      }
    }
    this.boundTotal();
  }

  /** The frames of `batch` back to back, and where each ends. */
  private encode(batch: readonly EventRow[]): { shared: Buffer; ends: readonly number[] } {
    const kept = this.recent.lastFrames();
    if (kept !== null) return { shared: kept, ends: this.recent.lastFrameEnds() };
    const ends: number[] = [];
    let text = '';
    let at = 0;
    for (const r of batch) {
      const frame = frameOf(r);
      text += frame;
      ends.push((at += Buffer.byteLength(frame)));
    }
    return { shared: Buffer.from(text, 'utf8'), ends };
  }

  /** Past CONSOLE_SSE_TOTAL_QUEUE_BYTES queued in all, drops the clients with the most queued until it holds. */
  private boundTotal(): void {
    let total = 0;
    for (const c of this.clients) total += c.queued;
    if (total <= this.options.totalQueueBytes) return;
    const bySize = [...this.clients].sort((a, b) => b.queued - a.queued);
    for (const c of bySize) {
      if (total <= this.options.totalQueueBytes) break;
      total -= c.queued;
      this.droppedOverTotal++;
      c.close('slow');
    }
  }

  /** Null when a stream from `address` may open, else which bound refuses it (counted). */
  admit(address: string): SseRefusal | null {
    if (this.clients.size >= this.options.maxStreams) {
      this.refusedTotal++;
      return { kind: 'total', max: this.options.maxStreams };
    }
    const max = this.options.maxStreamsPerAddress;
    if (max > 0 && (this.perAddress.get(address) ?? 0) >= max) {
      this.refusedPerAddress++;
      return { kind: 'address', max, address };
    }
    return null;
  }

  /** The streams' figures (system status `bus.streams`). */
  streamStats(): SseStreamStats {
    let queued = 0;
    for (const c of this.clients) queued += c.queued;
    return {
      open: this.clients.size,
      maxStreams: this.options.maxStreams,
      maxStreamsPerAddress: this.options.maxStreamsPerAddress,
      refusedTotal: this.refusedTotal,
      refusedPerAddress: this.refusedPerAddress,
      queuedBytes: queued,
      totalQueueBytes: this.options.totalQueueBytes,
      droppedOverTotal: this.droppedOverTotal,
      databaseReplays: this.replays.busy,
      databaseReplaysWaiting: this.replays.waiting,
    };
  }

  /**
   * Starts a stream on `res`. A HEAD gets the headers and no body at once: Node writes no body for HEAD,
   * so an endless stream would hold it without sending even the headers.
   * @param sinceId resume point: events with a greater id are replayed first; null for live only.
   * @param address the client's remote address (counted against its bound; {@link admit} first).
   */
  open(res: ServerResponse, filter: EventFilter, sinceId: number | null, address = ''): void {
    if (res.req.method === 'HEAD') {
      res.writeHead(200, STREAM_HEADERS);
      res.end();
      return;
    }
    const client = new SseClient(
      res,
      this.bus,
      this.recent,
      this.replays,
      filter,
      this.options,
      (reason) => {
        this.clients.delete(client);
        this.live.delete(client);
        const n = (this.perAddress.get(address) ?? 1) - 1;
        if (n > 0) this.perAddress.set(address, n);
        else this.perAddress.delete(address);
        if (reason === 'slow') this.droppedSlow++;
      },
      (n) => (this.deliveredFrames += n),
    );
    this.clients.add(client);
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1);
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

  /** Event frames handed to clients since start-up, one per event per client (`console_sse_events_delivered_total`). */
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

/** The frames of `batch` passing `filter`, as slices of `shared` (event `i` ends at `ends[i]`), one per run. */
function slicesFor(filter: EventFilter, batch: readonly EventRow[], shared: Buffer, ends: readonly number[]): { chunks: Buffer[]; count: number } {
  const chunks: Buffer[] = [];
  let count = 0;
  let runStart = -1;
  for (let i = 0; i < batch.length; i++) {
    const r = batch[i] as EventRow;
    const start = i === 0 ? 0 : (ends[i - 1] as number);
    if (passes(filter, r.severity, r.scope, r.proposalId ?? null)) {
      count++;
      if (runStart < 0) runStart = start;
    } else if (runStart >= 0) {
      chunks.push(shared.subarray(runStart, start));
      runStart = -1;
    }
  }
  if (runStart >= 0) chunks.push(shared.subarray(runStart));
  return { chunks, count };
}

/** At most `max` holders at once; the others wait in order (replays that read the database). */
class Turns {
  busy = 0;
  private readonly queue: (() => void)[] = [];
  constructor(private readonly max: number) {}

  get waiting(): number {
    return this.queue.length;
  }

  /** Resolves once a turn is free; call the function it resolves to once done (exactly once). */
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

class SseClient {
  private replaying = true;
  private held: Buffer[] = [];
  private heldBytes = 0;
  private closed = false;
  /** Ids at or below this are never sent (0: none): a client resumed from an id this instance has not
   * delivered yet (cluster mode), so the live events up to it are ones the client has. */
  private floor = 0;

  constructor(
    private readonly res: ServerResponse,
    private readonly bus: Bus,
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
    this.replay(sinceId, headId).catch(() => this.close('client'));
  }

  /** Writes stored events in (sinceId, headId] page by page, honouring back-pressure and yielding between pages;
   * database pages take a turn, so a burst of resumes reads a few at a time. */
  private async replay(sinceId: number, headId: number): Promise<void> {
    let cursor = sinceId;
    let turn: (() => void) | null = null;
    try {
      while (!this.closed) {
        // From memory while the resume point is recent enough; the database's pages are the same.
        let page: { readonly frames: Buffer | string; readonly count: number; readonly lastId: number } | null = this.recent.framesAfter(cursor, REPLAY_PAGE, this.filter, headId);
        if (page === null) {
          turn ??= await this.replays.take();
          if (this.closed) break;
          page = framesOf(await this.bus.readAfter(cursor, REPLAY_PAGE, this.filter, headId), cursor);
        }
        if (page.count > 0) {
          cursor = page.lastId;
          this.onReplayed(page.count);
          if (!this.res.write(page.frames)) await this.drained();
        }
        if (page.count < REPLAY_PAGE) break;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      turn?.();
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
      for (const c of chunks) {
        this.held.push(c);
        this.heldBytes += c.length;
      }
      if (this.heldBytes > this.options.maxQueueBytes) this.close('slow');
      return;
    }
    this.write(chunks);
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
