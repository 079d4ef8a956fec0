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

/**
 * The frames of events given as columns (ids ascending, each one's stored JSON), packed as {@link packFrames} packs
 * them: made where the events are stored (the SQLite event writer thread), so the main thread gets bytes to copy.
 * Into `shared` when they fit (@returns null then: read them with {@link unpackFrames} before it is written again),
 * else into a new ArrayBuffer, returned.
 */
export function packEventFrames(ids: ArrayLike<number>, data: readonly string[], shared?: SharedArrayBuffer): ArrayBuffer | null {
  const frames = new Array<string>(data.length);
  for (let i = 0; i < data.length; i++) frames[i] = `id: ${ids[i] as number}\ndata: ${data[i] as string}\n\n`;
  if (shared !== undefined && packFramesInto(ids, frames, (size) => (size <= shared.byteLength ? shared : null)) !== null) return null;
  return packFrames(ids, frames);
}

/** The block {@link packFrames} made (or {@link packEventFrames} in a shared buffer): views of `packed`, nothing copied. */
export function unpackFrames(packed: ArrayBufferLike): FrameBlock {
  const n = new Float64Array(packed, 0, 1)[0] as number;
  const header = headerBytes(n);
  const ends = new Float64Array(packed, 8 * (1 + n), n);
  return { ids: new Float64Array(packed, 8, n), ends, buf: Buffer.from(packed, header, n === 0 ? 0 : (ends[n - 1] as number)) };
}
