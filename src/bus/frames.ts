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
  // Unpooled: its ArrayBuffer is its own, whole, so it can be transferred.
  return packFramesInto(ids, frames, (size) => Buffer.allocUnsafeSlow(size).buffer as ArrayBuffer) as ArrayBuffer;
}

/** {@link packFrames} into the buffer `room` gives for the packed size (from its start), or nothing when it gives null. @returns that buffer, or null. */
function packFramesInto<B extends ArrayBufferLike>(ids: ArrayLike<number>, frames: readonly string[], room: (size: number) => B | null): B | null {
  const n = frames.length;
  const header = headerBytes(n);
  let size = header;
  for (let i = 0; i < n; i++) size += Buffer.byteLength(frames[i] as string);
  const target = room(size);
  if (target === null) return null;
  const bytes = Buffer.from(target, 0, size);
  const numbers = new Float64Array(bytes.buffer, 0, 1 + 2 * n);
  numbers[0] = n;
  let at = header;
  for (let i = 0; i < n; i++) {
    numbers[1 + i] = ids[i] as number;
    at += bytes.write(frames[i] as string, at, 'utf8');
    numbers[1 + n + i] = at - header;
  }
  return target;
}

/** Bytes of a frame around its id and JSON: `id: `, `\ndata: `, and the blank line. */
const FRAME_PARTS_BYTES = 'id: \ndata: \n\n'.length;
/** Bytes of an id's decimal digits at most (a double's safe integers). */
const ID_DIGITS_MAX = 16;

/**
 * The frames of events given as columns (ids ascending, each one's stored JSON), packed as {@link packFrames} packs
 * them: made where the events are stored (the SQLite event writer thread), so the main thread gets bytes to copy.
 * Each frame's parts are encoded straight into the block, no frame string made (each was a copy of its JSON, measured
 * and collected again). Into `shared` when they fit (@returns null then: read them with {@link unpackFrames} before it
 * is written again), else into a new ArrayBuffer, returned.
 */
export function packEventFrames(ids: ArrayLike<number>, data: readonly string[], shared?: SharedArrayBuffer): ArrayBuffer | null {
  const n = data.length;
  // A UTF-16 unit is 3 bytes of UTF-8 at most: a bound that fits needs no measuring pass.
  let bound = headerBytes(n);
  for (let i = 0; i < n; i++) bound += FRAME_PARTS_BYTES + ID_DIGITS_MAX + 3 * (data[i] as string).length;
  if (shared !== undefined && bound <= shared.byteLength) {
    writeEventFrames(ids, data, Buffer.from(shared, 0, bound));
    return null;
  }
  let size = headerBytes(n);
  for (let i = 0; i < n; i++) size += FRAME_PARTS_BYTES + String(ids[i] as number).length + Buffer.byteLength(data[i] as string);
  // Unpooled: its ArrayBuffer is its own, whole, so it can be transferred.
  const own = Buffer.allocUnsafeSlow(size);
  writeEventFrames(ids, data, own);
  return own.buffer as ArrayBuffer;
}

/** Writes the block of {@link packEventFrames} into `bytes` (from its start), which has room for it. */
function writeEventFrames(ids: ArrayLike<number>, data: readonly string[], bytes: Buffer): void {
  const n = data.length;
  const header = headerBytes(n);
  const numbers = new Float64Array(bytes.buffer, bytes.byteOffset, 1 + 2 * n);
  numbers[0] = n;
  let at = header;
  for (let i = 0; i < n; i++) {
    const id = ids[i] as number;
    numbers[1 + i] = id;
    at += bytes.write(`id: ${id}\ndata: `, at, 'latin1');
    at += bytes.write(data[i] as string, at, 'utf8');
    bytes[at++] = 0x0a;
    bytes[at++] = 0x0a;
    numbers[1 + n + i] = at - header;
  }
}

/** The block {@link packFrames} made (or {@link packEventFrames} in a shared buffer): views of `packed`, nothing copied. */
export function unpackFrames(packed: ArrayBufferLike): FrameBlock {
  const n = new Float64Array(packed, 0, 1)[0] as number;
  const header = headerBytes(n);
  const ends = new Float64Array(packed, 8 * (1 + n), n);
  return { ids: new Float64Array(packed, 8, n), ends, buf: Buffer.from(packed, header, n === 0 ? 0 : (ends[n - 1] as number)) };
}
