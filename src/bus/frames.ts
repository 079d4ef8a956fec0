// The Server-Sent Events frame of a stored event (api-decisions.md, "Event stream"): `id:`, `data:` with the
// event's JSON as stored, a blank line. The replay memory (recent-events.ts) and the SQLite log's frame reads
// (state/sqlite/event-reads.ts) write the same bytes.
import type { EventRow } from './local-event-log.js';

/** One stored event's frame. */
export const frameOf = (r: EventRow): string => `id: ${r.id}\ndata: ${r.data}\n\n`;

/** Stored events' frames back to back: `count` of them, the last one's id `lastId` (the cursor read after when none). */
export interface StoredFrames {
  readonly frames: Buffer | string;
  readonly count: number;
  readonly lastId: number;
}
