// Sanctioned fallbacks raised at run time (spec: Events, rules 3 and 5), counted per name in the state database.
import type { FallbackName, SanctionedFallback } from '../registry/index.js';
import type { FallbackStore, StateTx } from '../state/state-store.js';

export class FallbackCounter {
  constructor(
    private readonly repo: FallbackStore,
    private readonly registered: readonly SanctionedFallback[],
  ) {}

  /** Counts one raise of `name`. Call inside the transaction that records what raised it. */
  raise(tx: StateTx, name: FallbackName, at: string): Promise<void> {
    return tx.fallbacks.increment(name, at);
  }

  /** Counts by name: every registered fallback (0 if never raised), then other counted names (another build's registry). */
  async counts(): Promise<Record<string, number>> {
    const stored = await this.repo.all();
    const out: Record<string, number> = {};
    for (const f of this.registered) out[f.name] = stored.get(f.name) ?? 0;
    for (const [name, n] of stored) if (!Object.hasOwn(out, name)) out[name] = n;
    return out;
  }
}
