/**
 * Each segment's event ids per (severity, scope) pair, in memory beside the segment (event-log.ts), so a
 * filtered read fetches the rows it returns by id instead of scanning: its time is bounded by the page,
 * not by the events skipped. 8 bytes per event; pairs are few, and past {@link MAX_PAIRS} the read scans.
 */
import type { EventFilter, Severity } from '../../bus/event.js';
import { MAX_FILTER_PAIRS } from '../state-store.js';

/** Pairs a filtered read may merge; past it the read scans (event-log.ts). */
export const MAX_PAIRS = MAX_FILTER_PAIRS;

/** Ids per chunk of an {@link IdList}: 32 KiB of Float64Array, off the JS heap. */
const CHUNK_SHIFT = 12;
const CHUNK = 1 << CHUNK_SHIFT;
const CHUNK_MASK = CHUNK - 1;
/** The first chunk's first size; it doubles up to {@link CHUNK} (pairs of a few events stay small). */
const FIRST_CHUNK = 16;

/**
 * Ascending event ids, appended in fixed chunks: a growing JS array would copy itself into
 * ever larger backing stores, each past 128 KiB a large object that only a full collection
 * frees (tens of MB of garbage under a storm of lines). Only the first chunk grows, while it is
 * the only one, so a pair of one event (callers choose scopes) holds 128 bytes, not 32 KiB.
 */
export class IdList {
  private readonly chunks: Float64Array[] = [];
  private n = 0;

  get length(): number {
    return this.n;
  }

  push(id: number): void {
    const c = this.n >>> CHUNK_SHIFT;
    const k = this.n & CHUNK_MASK;
    let chunk = this.chunks[c];
    if (chunk === undefined) {
      chunk = new Float64Array(c === 0 ? FIRST_CHUNK : CHUNK);
      this.chunks.push(chunk);
    } else if (k === chunk.length) {
      const grown = new Float64Array(chunk.length * 2);
      grown.set(chunk);
      this.chunks[c] = chunk = grown;
    }
    chunk[k] = id;
    this.n++;
  }

  /** Ids it has room for without allocating. */
  get capacity(): number {
    return this.chunks.reduce((sum, c) => sum + c.length, 0);
  }

  /** The id at `i` (0 ≤ i < length). */
  at(i: number): number {
    return (this.chunks[i >>> CHUNK_SHIFT] as Float64Array)[i & CHUNK_MASK] as number;
  }

  /** Index of the first id greater than `id`. */
  firstAbove(id: number): number {
    let lo = 0;
    let hi = this.n;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.at(mid) <= id) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

interface Pair {
  readonly severity: Severity;
  readonly scope: string;
  readonly ids: IdList;
}

/** The pairs of one segment. */
export class EventPairs {
  private readonly pairs = new Map<string, Pair>();
  /** The pair of the last event noted: runs of one job's lines share one. */
  private last: Pair | undefined;

  /** Notes a stored event (ids ascending across calls). */
  note(id: number, severity: Severity, scope: string): void {
    let p = this.last;
    if (p === undefined || p.severity !== severity || p.scope !== scope) {
      const key = `${severity}\u0000${scope}`;
      p = this.pairs.get(key);
      if (p === undefined) this.pairs.set(key, (p = { severity, scope, ids: new IdList() }));
      this.last = p;
    }
    p.ids.push(id);
  }

  /**
   * The first `limit` ids in (`sinceId`, `upTo`] of events passing `filter`'s severities and
   * scope prefix, ascending; null when more than {@link MAX_PAIRS} pairs pass (the caller scans).
   */
  after(filter: EventFilter, sinceId: number, upTo: number, limit: number): number[] | null {
    const pairs = this.matching(filter);
    if (pairs === null) return null;
    const out: number[] = [];
    for (const p of pairs) {
      for (let i = p.ids.firstAbove(sinceId), n = 0; i < p.ids.length && n < limit; i++, n++) {
        const id = p.ids.at(i);
        if (id > upTo) break;
        out.push(id);
      }
    }
    out.sort((a, b) => a - b);
    return out.length > limit ? out.slice(0, limit) : out;
  }

  /** The newest `limit` ids of events passing `filter`, descending; null past {@link MAX_PAIRS} pairs. */
  newest(filter: EventFilter, limit: number): number[] | null {
    const pairs = this.matching(filter);
    if (pairs === null) return null;
    const out: number[] = [];
    for (const p of pairs) for (let i = p.ids.length - 1, n = 0; i >= 0 && n < limit; i--, n++) out.push(p.ids.at(i));
    out.sort((a, b) => b - a);
    return out.length > limit ? out.slice(0, limit) : out;
  }

  private matching(filter: EventFilter): Pair[] | null {
    const out: Pair[] = [];
    for (const p of this.pairs.values()) {
      if (filter.severities !== null && !filter.severities.includes(p.severity)) continue;
      if (filter.scopePrefix !== null && !p.scope.startsWith(filter.scopePrefix)) continue;
      out.push(p);
      if (out.length > MAX_PAIRS) return null;
    }
    return out;
  }
}
