/**
 * Line framing of a child's output (service-spec.md §Events: one event per line): bytes cut per line
 * before split2, which would drop an over-long line and rescan its buffer; read under a per-turn
 * budget shared by all streams, a waiting stream stops reading so the pipe fills and the child blocks.
 */
import { Transform, type Readable, type TransformCallback } from 'node:stream';
import split2 from 'split2';
import type { LineHold } from './output-gate.js';

/** One framed line. `number` counts from 1 per stream; `cut` is set when bytes were dropped. */
export interface FramedLine {
  readonly text: string;
  readonly number: number;
  readonly cut: boolean;
}

const NL = 0x0a;

/** Lines and characters per event-loop turn, all streams together, so floods cannot hold the loop; 512 lines are one bus flush. */
export const TURN_LINES = 512;
export const TURN_CHARS = 256 * 1024;

/** The per-turn budget shared by one supervisor's streams; waiting streams go next turn in order. Injected so instances never share it. */
export class LineTurns {
  private turnLines = 0;
  private turnChars = 0;
  private readonly waiting: LineReader[] = [];
  private tickScheduled = false;
  private readonly tickFn = () => this.tick();

  constructor(
    private readonly lines: number = TURN_LINES,
    private readonly chars: number = TURN_CHARS,
  ) {}

  /** True while this turn may deliver another line. */
  budgetLeft(): boolean {
    return this.turnLines < this.lines && this.turnChars < this.chars;
  }

  /** Counts one delivered line against this turn; the budget is renewed next turn. */
  spend(chars: number): void {
    this.turnLines++;
    this.turnChars += chars;
    this.scheduleTick();
  }

  /** Queues a reader whose lines wait for the next turn. */
  wait(reader: LineReader): void {
    this.waiting.push(reader);
    this.scheduleTick();
  }

  private scheduleTick(): void {
    if (!this.tickScheduled) {
      this.tickScheduled = true;
      setImmediate(this.tickFn);
    }
  }

  private tick(): void {
    this.tickScheduled = false;
    this.turnLines = 0;
    this.turnChars = 0;
    for (let n = this.waiting.length; n > 0 && this.budgetLeft(); n--) {
      const reader = this.waiting.shift() as LineReader;
      reader.queued = false;
      reader.pump();
    }
    if (this.waiting.length > 0) this.scheduleTick();
  }
}

/** Reads split2's lines of one stream within the shared budget and delivers them in order. */
class LineReader {
  private number = 0;
  queued = false;
  private holding = false;

  constructor(
    private readonly turns: LineTurns,
    private readonly lines: Transform,
    private readonly cutter: LineCutter,
    private readonly onLine: (line: FramedLine) => void,
    private readonly hold: LineHold | null,
  ) {}

  pump(): void {
    if (this.queued || this.holding) return;
    while (this.turns.budgetLeft()) {
      if (this.hold?.held) {
        // Backpressure (output-gate.ts): no line is read until the hold is released.
        this.holding = true;
        this.hold.whenReleased(() => {
          this.holding = false;
          this.pump();
        });
        return;
      }
      const text = this.lines.read() as string | null;
      if (text === null) return;
      const number = ++this.number;
      this.turns.spend(text.length);
      this.onLine({ text, number, cut: this.cutter.cutLines.delete(number) });
    }
    this.queued = true;
    this.turns.wait(this);
  }
}

/** Keeps the first `maxBytes` bytes of each line (on a UTF-8 boundary) and drops the rest. */
class LineCutter extends Transform {
  private lineBytes = 0;
  private dropping = false;
  private completed = 0;
  /** An incomplete UTF-8 character at the end of the last chunk, held back. */
  private carry: Buffer | null = null;
  /** Numbers of the lines that were cut (split2 emits lines in the same order). */
  readonly cutLines = new Set<number>();

  constructor(private readonly maxBytes: number) {
    super();
  }

  override _transform(input: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    const chunk = this.carry === null ? input : Buffer.concat([this.carry, input]);
    this.carry = null;
    let keep: Buffer[] | null = null; // only built when something in this chunk is dropped
    let start = 0;
    let copiedUpTo = 0;
    while (start <= chunk.length) {
      const nl = chunk.indexOf(NL, start);
      const end = nl === -1 ? chunk.length : nl;
      const len = end - start;
      if (this.dropping) {
        keep ??= [];
        keep.push(chunk.subarray(copiedUpTo, start));
        copiedUpTo = end; // skip [start, end)
      } else if (this.lineBytes + len > this.maxBytes) {
        let room = this.maxBytes - this.lineBytes;
        // Back off to a character boundary (at most 3 continuation bytes in UTF-8).
        for (let i = 0; i < 3 && room > 0 && ((chunk[start + room] as number) & 0xc0) === 0x80; i++) room--;
        keep ??= [];
        keep.push(chunk.subarray(copiedUpTo, start + room));
        copiedUpTo = end;
        this.lineBytes += room;
        this.dropping = true;
        this.cutLines.add(this.completed + 1);
      } else {
        this.lineBytes += len;
      }
      if (nl === -1) break;
      this.completed++;
      this.lineBytes = 0;
      this.dropping = false;
      start = nl + 1;
    }
    let out = chunk;
    if (keep !== null) {
      keep.push(chunk.subarray(copiedUpTo));
      out = Buffer.concat(keep);
    }
    if (!this.dropping) {
      const held = incompleteTail(out);
      if (held > 0) {
        this.carry = Buffer.from(out.subarray(out.length - held));
        out = out.subarray(0, out.length - held);
        this.lineBytes -= held;
      }
    }
    cb(null, out);
  }

  override _flush(cb: TransformCallback): void {
    cb(null, this.carry ?? undefined);
  }
}

function incompleteTail(buf: Buffer): number {
  for (let k = 1; k <= Math.min(3, buf.length); k++) {
    const b = buf[buf.length - k] as number;
    if ((b & 0xc0) === 0x80) continue; // continuation byte: keep looking for the lead
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > k ? k : 0;
  }
  return 0;
}

/** What a framing has taken in and still holds, for the drain after a job's exit (drain-watch.ts). */
export interface FramingMeter {
  /** Bytes read from the source so far. */
  bytes: number;
  /** Whether bytes or lines read from the source wait in the framing, not delivered yet. */
  holding: () => boolean;
}

/** A meter to hand to {@link frameLines}. */
export function framingMeter(): FramingMeter {
  return { bytes: 0, holding: () => false };
}

/**
 * Frames `source` into lines for `onLine`, in order, within `turns`' budget; lines past `maxBytes`
 * are cut, and nothing is delivered while `hold` is held. @returns once the last line is delivered; never rejects.
 */
export function frameLines(turns: LineTurns, source: Readable, maxBytes: number, onLine: (line: FramedLine) => void, hold: LineHold | null = null, meter?: FramingMeter): Promise<void> {
  const cutter = new LineCutter(maxBytes);
  const lines = split2();
  const reader = new LineReader(turns, lines, cutter, onLine, hold);
  if (meter) {
    source.on('data', (chunk: Buffer) => (meter.bytes += chunk.length));
    meter.holding = () => source.readableLength + cutter.writableLength + cutter.readableLength + lines.writableLength + lines.readableLength > 0;
  }
  return new Promise<void>((resolve) => {
    let settled = false;
    const done = () => {
      if (!settled) {
        settled = true;
        resolve();
      }
    };
    lines.on('readable', () => reader.pump());
    lines.on('end', done);
    lines.on('close', done);
    lines.on('error', done);
    cutter.on('error', () => lines.end());
    // A source error or teardown still ends the line stream, delivering what was framed.
    const endCutter = () => {
      if (!cutter.writableEnded) cutter.end();
    };
    source.on('error', endCutter);
    source.on('close', endCutter);
    source.pipe(cutter).pipe(lines);
  });
}
