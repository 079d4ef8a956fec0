/**
 * Sanctioned fallbacks raised at run time (spec: Events rules 3 and 5; issue: console
 * state, item 5): each raise adds one to a persisted count per name.
 */
import type { FallbackName, SanctionedFallback } from '../registry/index.js';
import type { FallbacksRepo } from '../state/fallbacks-repo.js';

export class FallbackCounter {
  constructor(
    private readonly repo: FallbacksRepo,
    private readonly registered: readonly SanctionedFallback[],
  ) {}

  /** Counts one raise of `name`. Call inside the transaction that records what raised it. */
  raise(name: FallbackName, at: string): void {
    this.repo.increment(name, at);
  }

  /**
   * Counts by name: every registered fallback (0 when never raised), then any other name
   * that was counted (e.g. by a build with another registry).
   */
  counts(): Record<string, number> {
    const stored = this.repo.all();
    const out: Record<string, number> = {};
    for (const f of this.registered) out[f.name] = stored.get(f.name) ?? 0;
    for (const [name, n] of stored) if (!Object.hasOwn(out, name)) out[name] = n;
    return out;
  }
}
