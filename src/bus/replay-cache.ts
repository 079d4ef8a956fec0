// Database replay pages shared between streams (api-decisions.md, "Event stream"). During a generation storm the
// stream clients that cannot keep up fall behind the replay memory together and replay the same stretch of the log
// within about a second of each other (P7 at full speed: 87% of the rows read were read for another client in the
// previous 500 ms). Unfiltered replays therefore read the log in blocks of BLOCK_IDS ids, kept by id, and serve every
// stream's pages out of them. A block is kept only once every id in it is delivered: stored, never changing after.
import { isEverything, type EventFilter } from './event.js';
import type { StoredFrames } from './frames.js';

/** Ids per block: a block is one database read of at most this many rows, as a replay page is. */
export const BLOCK_IDS = 500;

/** Reads the stored events' frames, one string per event, ids ascending (Bus.readFramesAfter). */
export type FrameReader = (sinceId: number, limit: number, filter: EventFilter, upTo: number) => readonly string[] | Promise<readonly string[]>;

/** The cache's figures (system status `bus.replay.cache`). */
export interface ReplayCacheStats {
  /** CONSOLE_SSE_REPLAY_CACHE_BYTES. */
  readonly maxBytes: number;
  readonly bytes: number;
  readonly blocks: number;
  /** Blocks read from the database, and replay pages served from blocks read before. */
  readonly blocksRead: number;
  readonly pagesShared: number;
}

/** The frames of the ids `(first - 1, last]` of one block: bytes, and each event's id and end. */
interface Block {
  readonly buf: Buffer;
  readonly ids: Float64Array;
  readonly ends: Float64Array;
}

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

  /**
   * @param maxBytes bytes of frames kept (0: none; each page is read for its stream alone).
   * @param read the database read.
   * @param delivered the newest id delivered to streams: every id up to it is stored, or never will be.
   */
  constructor(
    readonly maxBytes: number,
    private readonly read: FrameReader,
    private readonly delivered: () => number,
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
        parts.push(Buffer.from(rest.frames as string, 'utf8'));
        count += rest.count;
        lastId = rest.lastId;
      }
    } else if (count > 0 && shared) this.pagesShared++;
    return { frames: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts), count, lastId };
  }

  /** The cache's figures. */
  stats(): ReplayCacheStats {
    return { maxBytes: this.maxBytes, bytes: this.bytes, blocks: this.blocks.size, blocksRead: this.blocksRead, pagesShared: this.pagesShared };
  }

  private async direct(sinceId: number, limit: number, filter: EventFilter, upTo: number): Promise<StoredFrames & { readonly frames: string }> {
    const frames = await this.read(sinceId, limit, filter, upTo);
    return { frames: frames.join(''), count: frames.length, lastId: frames.length > 0 ? idOf(frames[frames.length - 1] as string) : sinceId };
  }

  /** Reads block `k` (or waits for the read under way) and keeps it, dropping the least recently used past the bound. */
  private async load(k: number, filter: EventFilter): Promise<Block> {
    let pending = this.reading.get(k);
    if (pending === undefined) {
      pending = (async () => {
        const frames = await this.read(k * BLOCK_IDS, BLOCK_IDS, filter, (k + 1) * BLOCK_IDS);
        this.blocksRead++;
        return blockOf(frames);
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

/**
 * One block of frames (ids ascending), in one buffer. Each frame is encoded straight into it: joining
 * them first made a string of the block's size (a large object, freed only by a full collection) per read.
 */
function blockOf(frames: readonly string[]): Block {
  if (frames.length === 0) return EMPTY_BLOCK;
  const ids = new Float64Array(frames.length);
  const ends = new Float64Array(frames.length);
  let at = 0;
  for (let i = 0; i < frames.length; i++) {
    const f = frames[i] as string;
    ids[i] = idOf(f);
    ends[i] = at += Buffer.byteLength(f);
  }
  const buf = Buffer.allocUnsafeSlow(at);
  let from = 0;
  for (let i = 0; i < frames.length; i++) from += buf.write(frames[i] as string, from, 'utf8');
  return { buf, ids, ends };
}
