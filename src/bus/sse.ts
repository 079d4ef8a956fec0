// Server-Sent Events delivery of bus events (api-decisions.md, "Event stream"): a
// `retry:` line, a replay after `Last-Event-ID`, then live frames (held during the replay: no gap, no duplicate).
// A client past its queue bound is dropped (it can resume), so the bus never waits for one.
import type { ServerResponse } from 'node:http';
import type { Bus } from './bus.js';
import { filterKey, isEverything, passes, type EventFilter } from './event.js';
import type { EventRow } from './local-event-log.js';
import { RecentEvents, type RecentEventsStats } from './recent-events.js';
import { ReplayCache, type FrameBlockReader, type ReplayCacheStats } from './replay-cache.js';
import { frameOf, type FrameBlock } from './frames.js';
import { SseClient, type SseOptions, STREAM_HEADERS, Turns } from './sse-client.js';

export type { SseCloseReason, SseOptions } from './sse-client.js';

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
  /** Database replay pages shared by streams. */
  private readonly fromLog: ReplayCache;
  /** The newest id delivered: every id up to it is stored (or never will be). */
  private deliveredThrough: number;

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
    const sub = bus.subscribe((batch, frames) => this.fanOut(batch, frames));
    this.unsubscribe = sub.unsubscribe;
    this.recent = new RecentEvents(options.replayMemoryBytes, retention, sub.headId);
    this.deliveredThrough = sub.headId;
    this.fromLog = new ReplayCache(
      options.replayCacheBytes,
      (sinceId, limit, filter, upTo) => bus.readFramesAfter(sinceId, limit, filter, upTo),
      () => this.deliveredThrough,
      // Looked up at each read, as the bus's other reads are.
      bus.readFrameBlock === undefined ? null : (sinceId, limit, upTo) => (bus.readFrameBlock as FrameBlockReader)(sinceId, limit, upTo),
    );
  }

  /** @param frames the batch's frames when made off the main thread (see BusSubscriber). */
  private fanOut(batch: readonly EventRow[], frames?: FrameBlock): void {
    this.recent.add(batch, frames);
    this.deliveredThrough = (batch[batch.length - 1] as EventRow).id;
    if (this.live.size === 0) return;
    // Encoded once for every client (by the event writer thread, or the replay memory's bytes when kept); each
    // filter gets slices, never a copy.
    let shared: Buffer | undefined;
    let ends: ArrayLike<number> = [];
    const byFilter = new Map<string, { readonly chunks: readonly Buffer[]; readonly count: number }>();
    for (const client of this.live) {
      const key = filterKey(client.filter);
      let out = byFilter.get(key);
      if (out === undefined) {
        // Frames made elsewhere are the writer's memory: copied (from the replay memory's copy when it kept them).
        if (shared === undefined) ({ shared, ends } = frames === undefined ? this.encode(batch) : { shared: this.recent.lastFrames() ?? Buffer.from(frames.buf), ends: frames.ends });
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
      this.fromLog,
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
    // Every event up to headId is stored and was delivered (EventBus.flushedHead): this client
    // receives the events after it live, and replays the others. A live-only stream starts after
    // every event published before it (stored later or not): as a resume from the newest id.
    const headId = this.bus.flushedHead();
    this.live.add(client);
    client.start(sinceId ?? this.bus.lastId, headId);
  }

  /** Number of open streams. */
  get size(): number {
    return this.clients.size;
  }

  /** The replay memory's figures and the shared database pages' (system status `bus.replay`). */
  replayStats(): RecentEventsStats & { readonly cache: ReplayCacheStats } {
    return { ...this.recent.stats(), cache: this.fromLog.stats() };
  }

  /** Streams disconnected because they could not keep up. */
  get slowDrops(): number {
    return this.droppedSlow;
  }

  /** Event frames handed to clients since start-up, one per event per client (`console_sse_events_delivered_total`). */
  get delivered(): number {
    return this.deliveredFrames;
  }

  /**
   * Ends every stream after a final flush of the bus (events published before are delivered first), e.g. on shutdown:
   * awaited without blocking the main thread where the bus can (Bus.storeQueued), for at most `limitMs` milliseconds.
   * Never rejects: a refused store is held.
   * @returns false when the streams ended before what was queued was stored (the bus's close stores it; a client
   * resuming with Last-Event-ID gets it), true otherwise.
   */
  async closeAll(limitMs: number): Promise<boolean> {
    let inTime = true;
    if (this.bus.storeQueued) inTime = await this.bus.storeQueued(limitMs);
    else this.bus.flush();
    for (const c of [...this.clients]) c.close('shutdown');
    clearInterval(this.heartbeat);
    this.unsubscribe();
    return inTime;
  }
}

/** The frames of `batch` passing `filter`, as slices of `shared` (event `i` ends at `ends[i]`), one per run. */
function slicesFor(filter: EventFilter, batch: readonly EventRow[], shared: Buffer, ends: ArrayLike<number>): { chunks: Buffer[]; count: number } {
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
