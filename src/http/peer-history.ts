/**
 * Cluster mode: the other live instances' histories, read from each (`?scope=instance`), so any
 * instance's page shows every chart; a peer silent past the timeout is listed unreachable.
 */
import { HISTORY_FIGURES, type HistoryFigure } from '../metrics/history-figures.js';
import type { HistorySnapshot } from '../metrics/history.js';

/** How long one peer's history is waited for, ms: well within the page's 5 s refresh. */
export const PEER_TIMEOUT_MS = 2000;

/** One instance's history as the route serves it. */
export interface InstanceHistory extends HistorySnapshot {
  /** CONSOLE_INSTANCE_ID; null on the embedded database's one instance. */
  readonly id: string | null;
  /** Whether this is the instance that answered. */
  readonly self: boolean;
  /** False when the peer's history could not be read; `error` says why. */
  readonly reachable: boolean;
  readonly error: string | null;
}

/** A peer as the instances table has it. */
export interface Peer {
  readonly id: string;
  readonly address: string;
}

/** A history without samples, for a peer that could not be read. */
export function emptySnapshot(): HistorySnapshot {
  return { times: [], series: Object.fromEntries(HISTORY_FIGURES.map((f) => [f.name, []])) as unknown as Record<HistoryFigure, (number | null)[]> };
}

/**
 * Reads every peer's history at once, `since` ms since the epoch, with `token` as bearer.
 * @returns one history per peer, in order; never throws.
 */
export function readPeerHistories(peers: readonly Peer[], token: string | null, since: number | undefined, timeoutMs = PEER_TIMEOUT_MS): Promise<InstanceHistory[]> {
  return Promise.all(peers.map((p) => readPeer(p, token, since, timeoutMs)));
}

async function readPeer(peer: Peer, token: string | null, since: number | undefined, timeoutMs: number): Promise<InstanceHistory> {
  const unreachable = (error: string): InstanceHistory => ({ id: peer.id, self: false, reachable: false, error, ...emptySnapshot() });
  const url = `${peer.address}/api/system-status/history?scope=instance${since === undefined ? '' : `&since=${since}`}`;
  try {
    const res = await fetch(url, {
      headers: { accept: 'application/json', ...(token === null ? {} : { authorization: `Bearer ${token}` }) },
      signal: AbortSignal.timeout(timeoutMs),
      redirect: 'error',
    });
    if (!res.ok) {
      await res.body?.cancel();
      return unreachable(`${url} answered ${res.status}`);
    }
    const body = (await res.json()) as { instances?: unknown };
    const own = Array.isArray(body.instances) ? (body.instances[0] as Partial<InstanceHistory> | undefined) : undefined;
    if (!own || !Array.isArray(own.times) || typeof own.series !== 'object' || own.series === null) return unreachable(`${url} answered something that is not a history`);
    // Figures this version does not know are left out; ones the peer lacks (an older version) are empty.
    const series = Object.fromEntries(HISTORY_FIGURES.map((f) => [f.name, Array.isArray(own.series?.[f.name]) ? own.series[f.name] : own.times?.map(() => null)]));
    return { id: peer.id, self: false, reachable: true, error: null, times: own.times, series: series as Record<HistoryFigure, (number | null)[]> };
  } catch (err) {
    const e = err as Error;
    const why = e.name === 'TimeoutError' ? `no answer within ${timeoutMs} ms` : ((e.cause as Error | undefined)?.message ?? e.message);
    return unreachable(`${url}: ${why}`);
  }
}
