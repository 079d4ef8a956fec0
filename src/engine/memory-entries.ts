/** The memory entries as served (engine-format.md §memory): `GET /api/memory` read and validated in workers, cached until `memory/` changes or a toggle is recorded. */
import type { SynthesisRunner } from './runner.js';
import type { CachedBody } from './answer-cache.js';
import { MissingCanonicalFieldError } from './errors.js';
import { checkId } from './ids.js';
import type { MemorySkipReporter } from './memory-skips.js';
import { bufferOf } from './project-list.js';
import type { StoreAccess } from './read-store-file.js';
import type { MemoryEntryCheck } from './store-reads.js';

/** Recorded memory toggles. */
export interface MemoryToggleSource {
  version(): number;
  toggles(): ReadonlyMap<string, boolean>;
}

export const NO_MEMORY_TOGGLES: MemoryToggleSource = { version: () => 0, toggles: () => new Map() };

export class MemoryEntries {
  private cached: { gen: number; toggles: number; value: CachedBody | Error } | undefined;

  /** @param nonce in every ETag; @param skips reports entry files left out of the list. */
  constructor(
    private readonly access: StoreAccess,
    private readonly runner: SynthesisRunner,
    private readonly toggles: MemoryToggleSource,
    private readonly nonce: string,
    private readonly skips: MemorySkipReporter,
  ) {}

  /** `GET /api/memory` at memory generation `gen`, toggles applied. @throws MissingCanonicalFieldError when `memory/` cannot be listed; StoreReadTimeoutError. */
  async list(gen: number): Promise<CachedBody> {
    const toggles = this.toggles.version();
    const m = this.cached;
    if (m && m.gen === gen && m.toggles === toggles) {
      if (m.value instanceof Error) throw m.value;
      return m.value;
    }
    const listing = await this.runner.read({ op: 'memory', access: this.access, toggles: Object.fromEntries(this.toggles.toggles()) });
    const value: CachedBody | Error = listing.ok ? { body: bufferOf(listing.body), etag: `W/"${this.nonce}-m-${gen}-${toggles}"` } : new MissingCanonicalFieldError(listing.detail);
    if (listing.ok) this.skips.report(listing.skipped);
    this.cached = { gen, toggles, value };
    if (value instanceof Error) throw value;
    return value;
  }

  /** Whether a memory entry file is there, for toggles. @throws InvalidIdError; MissingCanonicalFieldError when unusable; StoreReadTimeoutError. */
  async exists(entryId: string): Promise<boolean> {
    checkId('entry_id', entryId);
    const r: MemoryEntryCheck = await this.runner.read({ op: 'memory-entry', access: this.access, entryId });
    if (r.kind === 'unusable') throw new MissingCanonicalFieldError(r.detail);
    return r.kind === 'present';
  }
}
