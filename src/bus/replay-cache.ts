// Database replay pages shared between streams (api-decisions.md, "Event stream"). During a generation storm the
// stream clients that cannot keep up fall behind the replay memory together and replay the same stretch of the log
// within about a second of each other (P7 at full speed: 87% of the rows read were read for another client in the
// previous 500 ms). Unfiltered replays therefore read the log in blocks of BLOCK_IDS ids, kept by id, and serve every
// stream's pages out of them. A block is kept only once every id in it is delivered: stored, never changing after.
import { isEverything, type EventFilter } from './event.js';
import { packFrames, unpackFrames, type FrameBlock, type StoredFrames } from './frames.js';

/** Ids per block: a block is one database read of at most this many rows, as a replay page is. */
export const BLOCK_IDS = 500;

/** Reads the stored events' frames, one string per event, ids ascending (Bus.readFramesAfter). */
export type FrameReader = (sinceId: number, limit: number, filter: EventFilter, upTo: number) => readonly string[] | Promise<readonly string[]>;

/**
 * Reads every stored event with `sinceId < id <= upTo`, at most `limit`, as one block of frames made off the main
 * thread (Bus.readFrameBlock); resolves null when it cannot now, and the {@link FrameReader} reads instead.
 */
export type FrameBlockReader = (sinceId: number, limit: number, upTo: number) => Promise<FrameBlock | null>;

/** The cache's figures (system status `bus.replay.cache`). */
export interface ReplayCacheStats {
  /** CONSOLE_SSE_REPLAY_CACHE_BYTES. */
  readonly maxBytes: number;
  readonly bytes: number;
  readonly blocks: number;
  /** Blocks read from the database, and replay pages served from blocks read before. */
  readonly blocksRead: number;
  readonly pagesShared: number;
  /** Reads (blocks and a stream's own pages) made by the replay thread, and those it could not make (read here instead). */
  readonly threadReads: number;
  readonly threadFailures: number;
}

type Block = FrameBlock;

const EMPTY_BLOCK: Block = { buf: Buffer.alloc(0), ids: new Float64Array(0), ends: new Float64Array(0) };

/** The first event's id of a frame `id: <n>\n…`. */
const idOf = (frame: string): number => Number(frame.slice(4, frame.indexOf('\n')));

/** Replay pages read from the database, shared by streams (see the module's comment); memory within `maxBytes`. */
export class ReplayCache {
  /** By block number (ids `(k * BLOCK_IDS, (k + 1) * BLOCK_IDS]`), least recently used first. */
  private readonly blocks = new Map<number, Block>();
  /** Blocks being read (the cluster's reads are asynchronous): a second stream waits for the same read. */
  private readonly reading = new Map<number, Promise<Block>>();
  private bytes = 0;
  private blocksRead = 0;
  private pagesShared = 0;
  private threadReads = 0;
  private threadFailures = 0;

  /**
   * @param maxBytes bytes of frames kept (0: none; each page is read for its stream alone).
   * @param read the database read.
   * @param delivered the newest id delivered to streams: every id up to it is stored, or never will be.
   * @param readBlock the unfiltered reads off the main thread, where the back end has them (SQLite's replay thread).
   */
  constructor(
    readonly maxBytes: number,
    private readonly read: FrameReader,
    private readonly delivered: () => number,
    private readonly readBlock: FrameBlockReader | null = null,
  ) {}

  /** Events with `sinceId < id <= upTo` passing `filter`, at most `limit`; fewer only when none is left up to `upTo`. */
  async framesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): Promise<StoredFrames> {
    if (this.maxBytes === 0 || !isEverything(filter)) return this.direct(sinceId, limit, filter, upTo);
    const parts: Buffer[] = [];
    let count = 0;
    let lastId = sinceId;
    /** Every event up to here is in `parts`. */
    let cursor = sinceId;
    let shared = true;
    while (count < limit && cursor < upTo) {
      const k = Math.floor(cursor / BLOCK_IDS);
      const blockEnd = (k + 1) * BLOCK_IDS;
      if (blockEnd > this.delivered()) break;
      let block = this.blocks.get(k);
      if (block !== undefined) {
        // Most recently used last.
        this.blocks.delete(k);
        this.blocks.set(k, block);
      } else {
        shared = false;
        block = await this.load(k, filter);
      }
      const { ids, ends } = block;
      // An empty block is a gap in the ids (reserved before a restart): the direct read below skips it at once.
      if (ids.length === 0) break;
      let from = 0;
      let hi = ids.length;
      while (from < hi) {
        const mid = (from + hi) >>> 1;
        if ((ids[mid] as number) <= cursor) from = mid + 1;
        else hi = mid;
      }
      let to = from;
      while (to < ids.length && count + (to - from) < limit && (ids[to] as number) <= upTo) to++;
      if (to > from) {
        parts.push(block.buf.subarray(from === 0 ? 0 : (ends[from - 1] as number), ends[to - 1] as number));
        count += to - from;
        lastId = ids[to - 1] as number;
      }
      if (to < ids.length) {
        // Stopped inside the block: the page is full, or the next event is past `upTo`.
        cursor = count < limit ? upTo : lastId;
        break;
      }
      cursor = Math.min(upTo, blockEnd);
    }
    if (count < limit && cursor < upTo) {
      // The newest ids (not all delivered yet), or past a gap: read for this stream alone.
      const rest = await this.direct(cursor, limit - count, filter, upTo);
      if (rest.count > 0) {
        parts.push(typeof rest.frames === 'string' ? Buffer.from(rest.frames, 'utf8') : rest.frames);
        count += rest.count;
        lastId = rest.lastId;
      }
    } else if (count > 0 && shared) this.pagesShared++;
    return { frames: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts), count, lastId };
  }

  /** The cache's figures. */
  stats(): ReplayCacheStats {
    const { maxBytes, bytes, blocksRead, pagesShared, threadReads, threadFailures } = this;
    return { maxBytes, bytes, blocks: this.blocks.size, blocksRead, pagesShared, threadReads, threadFailures };
  }

  private async direct(sinceId: number, limit: number, filter: EventFilter, upTo: number): Promise<StoredFrames> {
    if (isEverything(filter)) {
      const block = await this.offThread(sinceId, limit, upTo);
      if (block !== null) {
        const n = block.ids.length;
        return { frames: block.buf, count: n, lastId: n > 0 ? (block.ids[n - 1] as number) : sinceId };
      }
    }
    const frames = await this.read(sinceId, limit, filter, upTo);
    return { frames: frames.join(''), count: frames.length, lastId: frames.length > 0 ? idOf(frames[frames.length - 1] as string) : sinceId };
  }

  /** An unfiltered read by the replay thread; null without one, or when it failed (counted). */
  private async offThread(sinceId: number, limit: number, upTo: number): Promise<Block | null> {
    if (this.readBlock === null) return null;
    const block = await this.readBlock(sinceId, limit, upTo);
    if (block === null) this.threadFailures++;
    else this.threadReads++;
    return block;
  }

  /** Reads block `k` (or waits for the read under way) and keeps it, dropping the least recently used past the bound. */
  private async load(k: number, filter: EventFilter): Promise<Block> {
    let pending = this.reading.get(k);
    if (pending === undefined) {
      pending = (async () => {
        const from = k * BLOCK_IDS;
        const block = (await this.offThread(from, BLOCK_IDS, from + BLOCK_IDS)) ?? blockOf(await this.read(from, BLOCK_IDS, filter, from + BLOCK_IDS));
        this.blocksRead++;
        return block;
      })();
      this.reading.set(k, pending);
      try {
        const block = await pending;
        this.keep(k, block);
        return block;
      } finally {
        this.reading.delete(k);
      }
    }
    return pending;
  }

  private keep(k: number, block: Block): void {
    const before = this.blocks.get(k);
    if (before !== undefined) {
      this.bytes -= before.buf.length;
      this.blocks.delete(k);
    }
    this.blocks.set(k, block);
    this.bytes += block.buf.length;
    for (const [key, old] of this.blocks) {
      if (this.bytes <= this.maxBytes || key === k) break;
      this.blocks.delete(key);
      this.bytes -= old.buf.length;
    }
  }
}

/** One block of frames read on this thread (ids ascending), in one buffer. */
function blockOf(frames: readonly string[]): Block {
  if (frames.length === 0) return EMPTY_BLOCK;
  return unpackFrames(packFrames(frames.map(idOf), frames));
}
