/**
 * Reading bus events in tests: `GET /api/events` pages, and waiting (polling, with a ceiling
 * that is a safety net, never an assertion) until a condition holds.
 */
export interface EngineEvent {
  id: string;
  ts: string;
  severity: string;
  scope: string;
  summary: string;
  detail: string | null;
  payload: Record<string, unknown>;
}

/** Every stored event after `sinceId` (paged), optionally filtered by a query string. */
export async function allEvents(url: string, query = '', sinceId = '0'): Promise<EngineEvent[]> {
  const out: EngineEvent[] = [];
  let cursor = sinceId;
  for (;;) {
    const res = await fetch(`${url}/api/events?limit=500&sinceId=${cursor}${query ? `&${query}` : ''}`);
    if (res.status !== 200) throw new Error(`GET /api/events answered ${res.status}: ${await res.text()}`);
    const page = (await res.json()) as EngineEvent[];
    out.push(...page);
    if (page.length < 500) return out;
    cursor = (page[page.length - 1] as EngineEvent).id;
  }
}

/** Polls `probe` until it returns a value other than undefined. */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ceilingMs = 30_000): Promise<T> {
  const until = Date.now() + ceilingMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** Waits until the exit event of `proposalId` is stored; returns every event of that job. */
export async function waitForJobEvents(url: string, proposalId: string): Promise<{ all: EngineEvent[]; exit: EngineEvent; lines: EngineEvent[] }> {
  const all = await waitFor(async () => {
    const evs = await allEvents(url, 'scopePrefix=engine/generation');
    return evs.some((e) => e.payload.proposal_id === proposalId && e.summary.startsWith('dispatch_cli exited')) ? evs : undefined;
  }, `exit of ${proposalId}`);
  const mine = all.filter((e) => e.payload.proposal_id === proposalId || e.detail?.startsWith(`${proposalId} `));
  const exit = mine.find((e) => e.summary.startsWith('dispatch_cli exited')) as EngineEvent;
  return { all: mine, exit, lines: mine.filter((e) => e.payload.source === 'dispatch_cli') };
}
