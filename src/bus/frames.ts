// The Server-Sent Events frame of a stored event (api-decisions.md, "Event stream"): `id:`, `data:` with the
// event's JSON as stored, a blank line. The replay memory (recent-events.ts) and the SQLite log's frame reads
// (state/sqlite/event-reads.ts) write the same bytes.
/** One stored event's frame (an EventRow, local-event-log.ts; its id and JSON are all a frame needs). */
export const frameOf = (r: { readonly id: number; readonly data: string }): string => `id: ${r.id}\ndata: ${r.data}\n\n`;

/** Stored events' frames back to back: `count` of them, the last one's id `lastId` (the cursor read after when none). */
export interface StoredFrames {
  readonly frames: Buffer | string;
  readonly count: number;
  readonly lastId: number;
}

/** Stored events' frames (ids ascending) in one buffer: each event's id, and where its frame ends in `buf` (bytes). */
export interface FrameBlock {
  readonly buf: Buffer;
  readonly ids: Float64Array;
  readonly ends: Float64Array;
}

/** Bytes before the frames in a packed block: the count, then the ids and the ends (8 bytes each). */
const headerBytes = (count: number): number => 8 * (1 + 2 * count);

/**
 * Frames and their ids in one ArrayBuffer (a count, the ids, the ends, then the UTF-8 frames), which a thread
 * hands over without a copy ({@link unpackFrames}). Each frame is encoded straight into it: joining them first
 * made a string of the block's size, a large object freed only by a full collection.
 */
export function packFrames(ids: ArrayLike<number>, frames: readonly string[]): ArrayBuffer {
  const n = frames.length;
  const header = headerBytes(n);
  let size = header;
  for (let i = 0; i < n; i++) size += Buffer.byteLength(frames[i] as string);
  // Unpooled: its ArrayBuffer is its own, whole, so it can be transferred.
  const bytes = Buffer.allocUnsafeSlow(size);
  const numbers = new Float64Array(bytes.buffer, 0, 1 + 2 * n);
  numbers[0] = n;
  let at = header;
  for (let i = 0; i < n; i++) {
    numbers[1 + i] = ids[i] as number;
    at += bytes.write(frames[i] as string, at, 'utf8');
    numbers[1 + n + i] = at - header;
  }
  return bytes.buffer as ArrayBuffer;
}

/**
 * The frames of events given as columns (ids ascending, each one's stored JSON), packed as {@link packFrames} packs
 * them: made where the events are stored (the SQLite event writer thread), so the main thread gets bytes to copy.
 */
export function packEventFrames(ids: ArrayLike<number>, data: readonly string[]): ArrayBuffer {
  const frames = new Array<string>(data.length);
  for (let i = 0; i < data.length; i++) frames[i] = `id: ${ids[i] as number}\ndata: ${data[i] as string}\n\n`;
  return packFrames(ids, frames);
}

/** The block {@link packFrames} made: views of `packed`, nothing copied. */
export function unpackFrames(packed: ArrayBuffer): FrameBlock {
  const n = new Float64Array(packed, 0, 1)[0] as number;
  const header = headerBytes(n);
  return { ids: new Float64Array(packed, 8, n), ends: new Float64Array(packed, 8 * (1 + n), n), buf: Buffer.from(packed, header) };
}
