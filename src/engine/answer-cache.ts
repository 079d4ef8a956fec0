/**
 * Cache of synthesised answers, bodies and 404/410/422 errors alike, each valid for one store
 * generation and take-state version; LRU-bounded in bytes (CONSOLE_CACHE_MAX_BYTES).
 */
import { LRUCache } from 'lru-cache';

/** A response body ready to send: the JSON bytes and a weak ETag for conditional requests. */
export interface CachedBody {
  readonly body: Buffer;
  readonly etag: string;
}

/** One cached answer, valid for one project `generation` and take-state `stateVersion` (0: uses none). */
export interface CachedAnswer {
  /** The project's store generation it was synthesised at. */
  readonly generation: number;
  /** The version of the project's recorded take states it used (0 when it uses none). */
  readonly stateVersion: number;
  readonly value: CachedBody | Error;
}

/** Bytes counted for a cached error answer (its object, not a body). */
const ERROR_BYTES = 256;

/** Cache figures for the system status (`cache`): `bytes` of bodies and keys, `hits` since start-up. */
export interface AnswerCacheStats {
  readonly entries: number;
  /** Bytes of the cached bodies and their keys. */
  readonly bytes: number;
  readonly maxBytes: number;
  /** Answers served from the cache since start-up. */
  readonly hits: number;
}

export class AnswerCache {
  private readonly lru: LRUCache<string, CachedAnswer>;
  private hits = 0;

  /** @param maxBytes bound on the bytes of cached bodies and keys (0 keeps nothing). */
  constructor(private readonly maxBytes: number) {
    this.lru = new LRUCache<string, CachedAnswer>({
      // lru-cache needs a positive bound; at 1 byte nothing fits, which is what 0 means.
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (a, key) => (a.value instanceof Error ? ERROR_BYTES : a.value.body.length) + key.length,
    });
  }

  /** The answer under `key` when valid for `generation` and `stateVersion` (a hit is counted and refreshed). */
  lookup(key: string, generation: number, stateVersion: number): CachedAnswer | undefined {
    const hit = this.lru.get(key);
    if (hit && hit.generation === generation && hit.stateVersion === stateVersion) {
      this.hits++;
      return hit;
    }
    return undefined;
  }

  /** Keeps `answer` unless a newer generation's is there: a slow task must not replace a newer answer. */
  remember(key: string, answer: CachedAnswer): void {
    const old = this.lru.peek(key);
    if (old && old.generation > answer.generation) return;
    this.lru.set(key, answer);
  }

  stats(): AnswerCacheStats {
    return { entries: this.lru.size, bytes: this.lru.calculatedSize, maxBytes: this.maxBytes, hits: this.hits };
  }
}
