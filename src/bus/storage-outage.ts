// A period when the state database refused events, and the `service/state` event that reports it once storing works again (README, "Events").
import type { EventInput } from './event.js';

/** Scope of the event that reports a period when events could not be stored. */
export const STORAGE_OUTAGE_SCOPE = 'service/state';

/** A period during which the state database refused events. */
export interface StorageOutage {
  /** ISO time of the first failure. */
  readonly since: string;
  /** The last error, e.g. `database or disk is full`. */
  error: string;
  /** Events held in memory, waiting to be stored. */
  held: number;
  /** The most events held at once during the period. */
  heldMax: number;
  /** Events dropped because more than `maxUnstored` were held. */
  dropped: number;
}

/** What the bus reports about storing: failing (first failure), recovered, or closed with events unstored. */
export type StorageStateListener = (state: 'failing' | 'recovered' | 'closed-unstored', outage: Readonly<StorageOutage>) => void;

/** The event published once storing works again: a warning, or a failure when events were dropped. */
export function outageEvent(outage: Readonly<StorageOutage>, until: string): EventInput {
  return {
    severity: outage.dropped > 0 ? 'failure' : 'warning',
    scope: STORAGE_OUTAGE_SCOPE,
    summary: outage.dropped > 0 ? `${outage.dropped} events lost: the state database could not store them` : 'events stored late: the state database could not store them for a while',
    detail: `from ${outage.since} to ${until}: ${outage.error}`,
    payload: { since: outage.since, until, error: outage.error, held: outage.heldMax, dropped: outage.dropped },
  };
}

/** The bus's side of an outage: the period, the bound on held events (the bus keeps the queue) and the retry timer. */
export class StorageRetry {
  private period: StorageOutage | null = null;
  private timer: NodeJS.Timeout | undefined;
  private closed = false;
  /** The period's report is queued as the retry's attempt ({@link attemptReport}). */
  private reportQueued = false;

  /** @param maxUnstored bound on held events (the oldest go past it). @param retry the attempt, every `retryMs`. */
  constructor(
    private readonly maxUnstored: number,
    private readonly retryMs: number,
    private readonly retry: () => void,
    private readonly listener: StorageStateListener | undefined,
  ) {}

  /** The current period of failing stores, or null when events are stored. */
  get outage(): StorageOutage | null {
    return this.period;
  }

  /** A store failed: opens or extends the period, drops the oldest of `held` past the bound (in place; its `spare`
   * newest do not count), schedules the next attempt. */
  failed(err: unknown, held: unknown[], spare = 0): void {
    const error = err instanceof Error ? err.message : String(err);
    const first = this.period === null;
    const outage = (this.period ??= { since: new Date().toISOString(), error, held: 0, heldMax: 0, dropped: 0 });
    outage.error = error;
    const excess = held.length - spare - this.maxUnstored;
    if (excess > 0) {
      held.splice(0, excess);
      outage.dropped += excess;
      // A queued report may be among the dropped: the end of the period reports it again.
      this.reportQueued = false;
    }
    outage.held = held.length;
    outage.heldMax = Math.max(outage.heldMax, outage.held);
    if (first) this.listener?.('failing', outage);
    if (this.timer === undefined && !this.closed) {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.retry();
      }, this.retryMs);
      this.timer.unref();
    }
  }

  /**
   * For a retry that finds nothing held (only refused, withdrawn publishes failed): the period's report, stored as the
   * attempt, else the period would never end. @returns null when there is no period or its report is queued.
   */
  attemptReport(): EventInput | null {
    if (this.period === null || this.reportQueued) return null;
    this.reportQueued = true;
    return outageEvent(this.period, new Date().toISOString());
  }

  /** Storing works again: ends the period. @returns its report to publish; null if no period or reported as the attempt. */
  recovered(): EventInput | null {
    const outage = this.period;
    if (outage === null) return null;
    this.period = null;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.listener?.('recovered', outage);
    const reported = this.reportQueued;
    this.reportQueued = false;
    return reported ? null : outageEvent(outage, new Date().toISOString());
  }

  /** No more attempts; reports events still held (`closed-unstored`). */
  close(held: number): void {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (this.period && held > 0) this.listener?.('closed-unstored', { ...this.period, held });
  }
}
