/**
 * The cache of synthesised answers (issue: core slice, item 3; issue 11, item 2): ready-to-send
 * JSON bodies, and the error answers (404/410/422) alike, keyed by project and query, each
 * valid for one store generation of its project and one version of its recorded take states.
 * Bounded in bytes (CONSOLE_CACHE_MAX_BYTES) by `lru-cache`: the least recently used entries
 * are evicted past the bound, and an entry larger than the whole bound is not kept.
 */
import { LRUCache } from 'lru-cache';

/** A response body ready to send: the JSON bytes and a weak ETag for conditional requests. */
export interface CachedBody {
  readonly body: Buffer;
  readonly etag: string;
}

/** One cached answer: the body (or the error thrown for it) and what it is valid for. */
export interface CachedAnswer {
  /** The project's store generation it was synthesised at. */
  readonly generation: number;
  /** The version of the project's recorded take states it used (0 when it uses none). */
  readonly stateVersion: number;
  readonly value: CachedBody | Error;
}

/** Bytes counted for a cached error answer (its object, not a body). */
const ERROR_BYTES = 256;

/** Cache figures for the system status (`cache`). */
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
      // lru-cache wants a positive bound; with 1 byte every entry is larger than the bound and
      // none is kept, which is what a bound of 0 means.
      maxSize: Math.max(1, maxBytes),
      sizeCalculation: (a, key) => (a.value instanceof Error ? ERROR_BYTES : a.value.body.length) + key.length,
    });
  }

  /**
   * The answer cached under `key` when it is valid for `generation` and `stateVersion` (a hit
   * makes it the most recently used, and is counted).
   */
  lookup(key: string, generation: number, stateVersion: number): CachedAnswer | undefined {
    const hit = this.lru.get(key);
    if (hit && hit.generation === generation && hit.stateVersion === stateVersion) {
      this.hits++;
      return hit;
    }
    return undefined;
  }

  /**
   * Keeps `answer` under `key`, unless the entry there is of a newer generation: a slow task
   * for an older generation must not replace a newer answer.
   */
  remember(key: string, answer: CachedAnswer): void {
    const old = this.lru.peek(key);
    if (old && old.generation > answer.generation) return;
    this.lru.set(key, answer);
  }

  stats(): AnswerCacheStats {
    return { entries: this.lru.size, bytes: this.lru.calculatedSize, maxBytes: this.maxBytes, hits: this.hits };
  }
}
