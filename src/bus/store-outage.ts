/**
 * A period when the state database refused events (disk full, read-only, I/O errors), and the
 * event that reports it once storing works again (README, "Events": `service/state`).
 */
import type { EventInput } from './event.js';

/** Scope of the event that reports a period when events could not be stored. */
export const STORE_OUTAGE_SCOPE = 'service/state';

/** A period during which the state database refused events. */
export interface StoreOutage {
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
export type StoreStateListener = (state: 'failing' | 'recovered' | 'closed-unstored', outage: Readonly<StoreOutage>) => void;

/** The event published once storing works again: a warning, or a failure when events were dropped. */
export function outageEvent(outage: Readonly<StoreOutage>, until: string): EventInput {
  return {
    severity: outage.dropped > 0 ? 'failure' : 'warning',
    scope: STORE_OUTAGE_SCOPE,
    summary:
      outage.dropped > 0
        ? `${outage.dropped} events lost: the state database could not store them`
        : 'events stored late: the state database could not store them for a while',
    detail: `from ${outage.since} to ${until}: ${outage.error}`,
    payload: { since: outage.since, until, error: outage.error, held: outage.heldMax, dropped: outage.dropped },
  };
}
