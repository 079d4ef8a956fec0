/**
 * Line framing of a child's output pipe (spec: Events, one event per output line): `\n` and
 * `\r\n` end a line; each line is cut at a byte bound (on a UTF-8 boundary) and decoded on its
 * own (undecodable bytes become U+FFFD); a last line without a newline is still delivered.
 *
 * All streams together deliver at most TURN_LINES lines (TURN_CHARS characters) per
 * event-loop turn: the rest of a chunk waits, as raw bytes, until a later turn, and the chunks
 * behind it wait in the pipe (the writable side holds the chunk's callback, so `pipe` stops
 * reading and the child blocks on its writes). A line's string is only made when delivered.
 */
import { Writable, type Readable } from 'node:stream';

/** One framed line. `number` counts from 1 per stream; `cut` is set when bytes were dropped. */
export interface FramedLine {
  readonly text: string;
  readonly number: number;
  readonly cut: boolean;
}

const NL = 0x0a;
const CR = 0x0d;

/**
 * Lines, and characters of them, framed and delivered per event-loop turn by all streams
 * together; past either, streams wait for the next turn, in turn order (a queue). Without a
 * bound, a child writing faster than lines are published had its whole backlog framed and
 * published in one turn (libuv reads up to 32 × 64 KB per poll, and every line is published
 * synchronously): the loop was held for 100-700 ms at a time, with every other job's lines
 * and every request behind it. A per-stream bound would still let 64 flooding jobs take
 * 64 times as long. 512 lines are one bus flush (FLUSH_BATCH), a few ms.
 */
const TURN_LINES = 512;
const TURN_CHARS = 256 * 1024;

/** What this turn has delivered so far; reset by the first `tick` after it. */
let turnLines = 0;
let turnChars = 0;
/** Streams with bytes left to frame, waiting for the next turn (oldest first). */
const waiting: LineFramer[] = [];
let tickScheduled = false;

const budgetLeft = () => turnLines < TURN_LINES && turnChars < TURN_CHARS;

function scheduleTick(): void {
  if (!tickScheduled) {
    tickScheduled = true;
    setImmediate(tick);
  }
}

/** A new turn: the budget is renewed, and the streams that waited go first, in order. */
function tick(): void {
  tickScheduled = false;
  turnLines = 0;
  turnChars = 0;
  for (let n = waiting.length; n > 0 && budgetLeft(); n--) (waiting.shift() as LineFramer).continueFraming();
  if (waiting.length > 0) scheduleTick();
}

/** Bytes kept of a line that spans chunks beyond the bound: enough to back a cut off. */
const CUT_SLACK = 4;

/** True for a UTF-8 continuation byte (10xxxxxx). */
const isContinuation = (b: number | undefined) => b !== undefined && (b & 0xc0) === 0x80;

class LineFramer extends Writable {
  private number = 0;
  /** Bytes of the current line from earlier chunks (at most maxBytes + CUT_SLACK kept). */
  private partial: Buffer[] = [];
  private partialKept = 0;
  /** Bytes of the current line so far, kept or not. */
  private partialTotal = 0;
  /** The chunk being framed, the offset of its first unframed byte, and its write callback. */
  private chunk: Buffer | null = null;
  private offset = 0;
  private callback: ((err?: Error | null) => void) | null = null;

  constructor(
    private readonly maxBytes: number,
    private readonly onLine: (line: FramedLine) => void,
  ) {
    super({ decodeStrings: true });
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    this.chunk = chunk;
    this.offset = 0;
    this.callback = cb;
    this.frame();
  }

  override _final(cb: (err?: Error | null) => void): void {
    // The last line without a newline: delivered as is (a `\r` at its end is kept).
    if (this.partialTotal > 0) this.deliverPartial(null, 0, 0, false);
    cb();
  }

  /** Frames the current chunk until it is done or this turn's budget is spent. */
  private frame(): void {
    const chunk = this.chunk as Buffer;
    while (this.offset < chunk.length) {
      if (!budgetLeft()) {
        // The chunk's callback is held: `pipe` stops reading the child's output meanwhile.
        waiting.push(this);
        scheduleTick();
        return;
      }
      const start = this.offset;
      const nl = chunk.indexOf(NL, start);
      if (nl === -1) {
        this.keepPartial(chunk, start, chunk.length);
        this.offset = chunk.length;
        break;
      }
      this.offset = nl + 1;
      if (this.partialTotal > 0) this.deliverPartial(chunk, start, nl, true);
      else this.deliver(chunk, start, nl, nl - start, true);
    }
    const cb = this.callback as (err?: Error | null) => void;
    this.chunk = null;
    this.callback = null;
    cb();
  }

  /** Called by `tick`: goes on framing the chunk it stopped in. */
  continueFraming(): void {
    if (this.chunk !== null) this.frame();
  }

  /** Adds bytes [start, end) of `chunk` to the current line, keeping what a cut needs. */
  private keepPartial(chunk: Buffer, start: number, end: number): void {
    const room = this.maxBytes + CUT_SLACK - this.partialKept;
    const take = Math.min(end - start, Math.max(0, room));
    if (take > 0) {
      // A copy: the chunk itself must not be held (it may be a slice of a larger buffer).
      this.partial.push(Buffer.from(chunk.subarray(start, start + take)));
      this.partialKept += take;
    }
    this.partialTotal += end - start;
  }

  /** Ends the line begun in earlier chunks with bytes [start, end) of `chunk` (null: none). */
  private deliverPartial(chunk: Buffer | null, start: number, end: number, terminated: boolean): void {
    if (chunk !== null) this.keepPartial(chunk, start, end);
    const bytes = this.partial.length === 1 ? (this.partial[0] as Buffer) : Buffer.concat(this.partial, this.partialKept);
    const total = this.partialTotal;
    this.partial = [];
    this.partialKept = 0;
    this.partialTotal = 0;
    this.deliver(bytes, 0, bytes.length, total, terminated);
  }

  /**
   * Delivers the line held in bytes [start, end) of `buf`, whose full length was `total`
   * bytes (more than end - start when bytes past the bound were not kept).
   * @param terminated the line ended with `\n`: a `\r` before it is not part of the line.
   */
  private deliver(buf: Buffer, start: number, end: number, total: number, terminated: boolean): void {
    let stop = end;
    let cut = false;
    if (total > this.maxBytes) {
      // Keep the first maxBytes bytes, backed off so that no character is split.
      let room = this.maxBytes;
      for (let i = 0; i < 3 && room > 0 && isContinuation(buf[start + room]); i++) room--;
      stop = start + room;
      cut = true;
    }
    if (terminated && stop > start && buf[stop - 1] === CR) stop--;
    const text = buf.toString('utf8', start, stop);
    turnLines++;
    turnChars += text.length;
    scheduleTick(); // renews the budget next turn
    this.onLine({ text, number: ++this.number, cut });
  }
}

/**
 * Frames `source` into lines and calls `onLine` for each, in order; all streams together
 * deliver at most TURN_LINES lines (TURN_CHARS characters) per event-loop turn.
 * @param maxBytes bound on one line in bytes (before decoding); longer lines are cut to it.
 * @returns a promise that settles once the last line has been delivered (source ended,
 *   errored or was destroyed); it never rejects.
 */
export function frameLines(source: Readable, maxBytes: number, onLine: (line: FramedLine) => void): Promise<void> {
  const framer = new LineFramer(maxBytes, onLine);
  return new Promise<void>((resolve) => {
    let settled = false;
    const done = () => {
      if (!settled) {
        settled = true;
        resolve();
      }
    };
    framer.on('finish', done);
    framer.on('close', done);
    framer.on('error', done);
    // A source error or teardown still ends the framing, delivering what was framed.
    const end = () => {
      if (!framer.writableEnded) framer.end();
    };
    source.on('error', end);
    source.on('close', end);
    source.pipe(framer);
  });
}
