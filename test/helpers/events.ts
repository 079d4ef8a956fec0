/**
 * Reading bus events in tests: `GET /api/events` pages, and waiting (polling, with a ceiling
 * that is a safety net, never an assertion) until a condition holds.
 */
import { waitCeilingMs } from './ceilings.js';

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

/**
 * Polls `probe` until it returns a value other than undefined.
 * @param ceilingMs a safety net; by default the wait lasts as long as its test may ({@link waitCeilingMs}).
 */
export async function waitFor<T>(probe: () => Promise<T | undefined> | T | undefined, what: string, ceilingMs = waitCeilingMs()): Promise<T> {
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

/** A job as `GET /api/jobs` serves it (the fields the agreement check reads). */
export interface JobView {
  proposalId: string;
  state: string;
  rc: number | null;
  stdoutLines: number;
  stderrLines: number;
}

/**
 * What is wrong between a job's state and its events (shared/design/cluster.md, "Under
 * faults": a state change commits with its events), read through `url`; empty when they agree:
 * - `running`: no exit and no lost event;
 * - `exited ok` / `exited failed`: exactly one exit event, the job's last, with the job's rc;
 *   no lost event; its lines once each and in order on each pipe (1..n), n the job's count;
 * - `lost`: exactly one lost event, the job's last; no exit event.
 * Events retention removed are not looked for: the job's events must start with its spawn.
 */
export async function jobEventProblems(url: string, job: JobView): Promise<string[]> {
  const events = await allEvents(url, `proposalId=${job.proposalId}`);
  const problems: string[] = [];
  const say = (what: string) => problems.push(`${job.proposalId} (${job.state}): ${what}`);
  const exits = events.filter((e) => e.summary.startsWith('dispatch_cli exited rc='));
  const losts = events.filter((e) => e.summary.startsWith('dispatch_cli lost pid='));
  if (events.length > 0 && !events[0]!.summary.startsWith('dispatch_cli spawned pid=')) say(`first event "${events[0]!.summary}", not its spawn`);
  const last = events.at(-1);
  if (job.state === 'running') {
    if (exits.length + losts.length > 0) say(`${exits.length} exit and ${losts.length} lost events while running`);
  } else if (job.state === 'lost') {
    if (losts.length !== 1) say(`${losts.length} lost events`);
    if (exits.length > 0) say(`${exits.length} exit events`);
    if (last !== undefined && last !== losts[0]) say(`"${last.summary}" after its lost event`);
  } else if (job.state === 'exited ok' || job.state === 'exited failed') {
    if (exits.length !== 1) say(`${exits.length} exit events`);
    if (losts.length > 0) say(`${losts.length} lost events`);
    if (exits[0] && exits[0].payload.rc !== job.rc) say(`exit event rc ${String(exits[0].payload.rc)}, job rc ${job.rc}`);
    if (last !== undefined && last !== exits[0]) say(`"${last.summary}" after its exit event`);
    for (const [source, count] of [
      ['stdout', job.stdoutLines],
      ['stderr', job.stderrLines],
    ] as const) {
      const numbers = events.flatMap((e) => {
        const m = new RegExp(`^${job.proposalId} ${source} line (\\d+)`).exec(e.detail ?? '');
        return m ? [Number(m[1])] : [];
      });
      if (numbers.length !== count || numbers.some((n, i) => n !== i + 1)) say(`${source} lines ${numbers.length} (not 1..${count} in order)`);
    }
  }
  return problems;
}
