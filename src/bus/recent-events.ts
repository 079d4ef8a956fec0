// The newest stored events in memory, so `Last-Event-ID` replays need not read SQLite on the main thread. Every
// event after {@link floor} is kept in id order (a page equals the database's), as UTF-8 frames in fixed pages
// outside the JS heap, reused rather than collected, so memory stays within the bound.
import { passes, type EventFilter, type Severity } from './event.js';
import type { FrameBlock, StoredFrames } from './frames.js';
import type { EventRow } from './local-event-log.js';

/** Bytes of one page: a sixteenth of the bound, within these limits; an event larger gets a page of its own. */
const PAGE_MIN = 4 * 1024;
const PAGE_MAX = 256 * 1024;
/** Dropped pages kept for reuse; memory held is at most the bound plus these and the newest page. */
const SPARE_PAGES = 2;
const DATA_FIELD = [0x0a, 0x64, 0x61, 0x74, 0x61, 0x3a, 0x20];
/** The most bytes a frame adds to an event's JSON: `id: ` + 16 digits + `\ndata: ` + `\n\n`. */
const FRAME_BYTES = 4 + 16 + DATA_FIELD.length + 2;

/** Figures for the system status (`bus.replay`). */
export interface RecentEventsStats {
  /** CONSOLE_SSE_REPLAY_MEMORY_BYTES. */
  readonly maxBytes: number;
  readonly events: number;
  /** Bytes of the pages held. */
  readonly bytes: number;
  /** Replay pages served from memory, and from the database (a resume point older than the memory). */
  readonly pagesFromMemory: number;
  readonly pagesFromDatabase: number;
}

/** Frames of events out of the memory, back to back: `count` of them, the last one's id `lastId`. */
export type ReplayFrames = StoredFrames & { readonly frames: Buffer };

/** One page: frames back to back and each event's id, end offset and filter fields; arrays are reused with the page so a steady stream allocates nothing. */
interface Page {
  readonly buf: Buffer;
  used: number;
  count: number;
  ids: Float64Array;
  ends: Float64Array;
  readonly severities: Severity[];
  readonly scopes: string[];
  readonly proposals: (string | null)[];
}

export class RecentEvents {
  private readonly pages: Page[] = [];
  /** Dropped pages, reused (readers only ever get copies). */
  private readonly spares: Page[] = [];
  private events = 0;
  private bytes = 0;
  private floorId: number;
  private fromMemory = 0;
  private fromDatabase = 0;
  private readonly pageBytes: number;
  private readonly lastBatch: [Page, number, number][] = [];
  private readonly lastBatchEnds: number[] = [];

  /** @param floorId the newest id stored before the first batch this will be given. */
  constructor(
    readonly maxBytes: number,
    private readonly maxEvents: number,
    floorId: number,
  ) {
    this.floorId = floorId;
    this.pageBytes = Math.min(PAGE_MAX, Math.max(PAGE_MIN, Math.floor(maxBytes / 16)));
  }

  /** Every stored event with a greater id, up to the newest delivered, is kept. */
  get floor(): number {
    return this.floorId;
  }

  /**
   * Keeps a batch the bus delivered (stored, ids ascending), dropping the oldest pages past the bounds.
   * @param frames the batch's frames made off the main thread (BusSubscriber): copied, not encoded again.
   */
  add(batch: readonly EventRow[], frames?: FrameBlock): void {
    this.lastBatch.length = 0;
    this.lastBatchEnds.length = 0;
    if (this.maxBytes === 0) {
      const last = batch[batch.length - 1];
      if (last) this.floorId = last.id;
      return;
    }
    if (frames === undefined) this.encode(batch);
    else this.copy(batch, frames);
    // The newest page always stays (the bound is exceeded by at most a sixteenth); a dropped page is
    // rewritten only by a later add, so the last batch's bytes stay intact until then.
    while (this.pages.length > 1 && (this.bytes > this.maxBytes || this.events > this.maxEvents)) {
      const old = this.pages.shift() as Page;
      this.bytes -= old.buf.length;
      this.events -= old.count;
      this.floorId = old.ids[old.count - 1] as number;
      if (old.buf.length === this.pageBytes && this.spares.length < SPARE_PAGES) this.spares.push(old);
    }
  }

  /** Writes the frames of `batch` into the pages. */
  private encode(batch: readonly EventRow[]): void {
    let written: [Page, number, number] | undefined;
    let batchBytes = 0;
    for (const r of batch) {
      const id = r.id;
      let page = this.pages[this.pages.length - 1];
      // UTF-8 takes at most 3 bytes per UTF-16 unit: an event that surely fits is not measured first.
      const room = page === undefined ? 0 : page.buf.length - page.used - FRAME_BYTES;
      if (page === undefined || (r.data.length * 3 > room && Buffer.byteLength(r.data) > room)) {
        page = this.newPage(FRAME_BYTES + Buffer.byteLength(r.data));
        this.pages.push(page);
        this.bytes += page.buf.length;
      }
      const { buf } = page;
      let at = page.used;
      const frameStart = at;
      if (written === undefined || written[0] !== page) this.lastBatch.push((written = [page, at, at]));
      // Written by hand: cheaper than a string and a native call per event.
      buf[at++] = 0x69; // i
      buf[at++] = 0x64; // d
      buf[at++] = 0x3a; // :
      buf[at++] = 0x20;
      let digits = 1;
      for (let v = id; v >= 10; v = Math.floor(v / 10)) digits++;
      for (let k = digits - 1, v = id; k >= 0; k--, v = Math.floor(v / 10)) buf[at + k] = 0x30 + (v % 10);
      at += digits;
      for (let k = 0; k < DATA_FIELD.length; k++) buf[at++] = DATA_FIELD[k] as number;
      at += buf.write(r.data, at);
      buf[at++] = 10;
      buf[at++] = 10;
      page.used = at;
      written[2] = at;
      this.lastBatchEnds.push((batchBytes += at - frameStart));
      this.note(page, r);
    }
  }

  /** Copies the frames of `batch` (`frames`, made elsewhere, event `i` ending at `frames.ends[i]`) into the pages, a run per page. */
  private copy(batch: readonly EventRow[], frames: FrameBlock): void {
    const { buf: src, ends } = frames;
    let page = this.pages[this.pages.length - 1];
    let written: [Page, number, number] | undefined;
    /** The run not copied yet: from `runFrom` in `src` to the previous frame's end, to `runAt` in the page. */
    let runFrom = 0;
    let runAt = page?.used ?? 0;
    let prev = 0;
    for (let i = 0; i < batch.length; i++) {
      const end = ends[i] as number;
      const len = end - prev;
      if (page === undefined || len > page.buf.length - page.used) {
        if (page !== undefined && prev > runFrom) src.copy(page.buf, runAt, runFrom, prev);
        page = this.newPage(len);
        this.pages.push(page);
        this.bytes += page.buf.length;
        runFrom = prev;
        runAt = 0;
      }
      if (written === undefined || written[0] !== page) this.lastBatch.push((written = [page, page.used, page.used]));
      page.used += len;
      written[2] = page.used;
      // The frames are back to back from the batch's first: their ends in the batch's bytes are the given ones.
      this.lastBatchEnds.push(end);
      this.note(page, batch[i] as EventRow);
      prev = end;
    }
    if (page !== undefined && prev > runFrom) src.copy(page.buf, runAt, runFrom, prev);
  }

  /** Records the event whose frame ends at `page.used`. */
  private note(page: Page, r: EventRow): void {
    const i = page.count++;
    if (i === page.ids.length) grow(page);
    page.ids[i] = r.id;
    page.ends[i] = page.used;
    page.severities[i] = r.severity;
    page.scopes[i] = r.scope;
    page.proposals[i] = r.proposalId ?? null;
    this.events++;
  }

  /** Where each event of the last batch ends in {@link lastFrames}' bytes (valid until the next add). */
  lastFrameEnds(): readonly number[] {
    return this.lastBatchEnds;
  }

  /** The last batch's frames as a new buffer (pages get rewritten), event `i` ending at {@link lastFrameEnds}()[i]; null when nothing is kept. */
  lastFrames(): Buffer | null {
    if (this.maxBytes === 0) return null;
    const parts = this.lastBatch;
    if (parts.length === 1) {
      const [page, start, end] = parts[0] as [Page, number, number];
      const out = Buffer.allocUnsafe(end - start);
      page.buf.copy(out, 0, start, end);
      return out;
    }
    return Buffer.concat(parts.map(([page, start, end]) => page.buf.subarray(start, end)));
  }

  private newPage(len: number): Page {
    const spare = len <= this.pageBytes ? this.spares.pop() : undefined;
    if (spare !== undefined) {
      spare.used = 0;
      spare.count = 0;
      return spare;
    }
    const slots = Math.max(16, this.pageBytes >> 6);
    return {
      buf: Buffer.allocUnsafeSlow(Math.max(this.pageBytes, len)),
      used: 0,
      count: 0,
      ids: new Float64Array(slots),
      ends: new Float64Array(slots),
      severities: [],
      scopes: [],
      proposals: [],
    };
  }

  /** Kept frames with `sinceId < id <= upTo` passing `filter`, at most `limit`; null when `sinceId` is below {@link floor} (read the database). */
  framesAfter(sinceId: number, limit: number, filter: EventFilter, upTo: number): ReplayFrames | null {
    if (sinceId < this.floorId) {
      this.fromDatabase++;
      return null;
    }
    this.fromMemory++;
    const parts: Buffer[] = [];
    let count = 0;
    let lastId = sinceId;
    let from = -1;
    let to = -1;
    let cur: Page | undefined;
    const cut = () => {
      if (cur !== undefined && to > from) parts.push(cur.buf.subarray(from, to));
    };
    scan: for (const page of this.pages) {
      const { ids } = page;
      const n = page.count;
      if (n === 0 || (ids[n - 1] as number) <= sinceId) continue;
      let lo = 0;
      let hi = n;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if ((ids[mid] as number) <= sinceId) lo = mid + 1;
        else hi = mid;
      }
      for (let i = lo; i < n; i++) {
        const id = ids[i] as number;
        if (id > upTo || count >= limit) break scan;
        if (!passes(filter, page.severities[i] as Severity, page.scopes[i] as string, page.proposals[i] as string | null)) continue;
        const start = i === 0 ? 0 : (page.ends[i - 1] as number);
        if (page !== cur || start !== to) {
          cut();
          cur = page;
          from = start;
        }
        to = page.ends[i] as number;
        count++;
        lastId = id;
      }
    }
    cut();
    return { frames: Buffer.concat(parts), count, lastId };
  }

  stats(): RecentEventsStats {
    return { maxBytes: this.maxBytes, events: this.events, bytes: this.bytes, pagesFromMemory: this.fromMemory, pagesFromDatabase: this.fromDatabase };
  }
}

function grow(page: Page): void {
  const ids = new Float64Array(page.ids.length * 2);
  ids.set(page.ids);
  const ends = new Float64Array(page.ends.length * 2);
  ends.set(page.ends);
  page.ids = ids;
  page.ends = ends;
}
