/**
 * One job's events through the real server: `GET /api/jobs/{id}/events`
 * and the `proposalId` filter of `GET /api/events` and of the stream (live, replay and
 * `Last-Event-ID` resume), with real child processes and a real state database; and the
 * upgrade of a state database whose events were stored before the filter existed.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/state/sqlite/db.js';
import { allEvents, waitFor, waitForJobEvents, type EngineEvent } from '../helpers/events.js';
import { fixture, makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';

const PROJECT = 'harbor-lights';
const LINES = 12;
const HOLD_AFTER = LINES / 2;

let t: TestService;
/** The file that lets the jobs print their second half (ev-lines.mjs, EV_GO). */
let go: string;
beforeAll(async () => {
  // Each job prints LINES lines, one every 100 ms, and holds after the first half until `go`
  // exists: two jobs run side by side, their lines interleaved, however slowly each starts (on
  // a loaded machine the second one once started after the first had ended).
  const { tmp } = makeTempStore('sample');
  go = path.join(tmp, 'go');
  t = await startTestService({
    tmp,
    env: { DISPATCH_CLI: fixture('ev-lines.mjs'), EV_LINES: String(LINES), EV_BATCH: '1', EV_INTERVAL_MS: '100', EV_GO: go, EV_HOLD_AFTER: String(HOLD_AFTER) },
  });
});
afterAll(async () => {
  await t?.close();
});

async function generate(): Promise<string> {
  const res = await t.post('/api/proposals/generate', { project: PROJECT });
  expect(res.status, await res.clone().text()).toBe(202);
  return ((await res.json()) as { proposalId: string }).proposalId;
}

async function list(path: string): Promise<EngineEvent[]> {
  const res = await t.get(path);
  expect(res.status, `${path}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as EngineEvent[];
}

async function expectError(path: string, status: number, code: string): Promise<void> {
  const res = await t.get(path);
  const body = (await res.json()) as { code: string };
  expect(res.status, `${path}: ${JSON.stringify(body)}`).toBe(status);
  expect(body.code, path).toBe(code);
}

const ids = (evs: readonly { id: string }[]) => evs.map((e) => e.id);
const isExit = (e: EngineEvent) => e.summary.startsWith('dispatch_cli exited');

describe('a job’s events', () => {
  let a: string;
  let b: string;
  /** A's events as the tests found them before the filter: payload proposal_id or the detail's first word. */
  let mineA: EngineEvent[];
  let streamed: EngineEvent[];

  beforeAll(async () => {
    a = await generate();
    // From the start (sinceId=0: replay, then live), while A and B run side by side.
    const sse = new SseClient(`${t.url}/api/events/stream?proposalId=${a}&sinceId=0`);
    b = await generate();
    await waitFor(async () => {
      const held = (id: string) => (e: EngineEvent) => e.detail === `${id} stdout line ${HOLD_AFTER}`;
      const evs = await allEvents(t.url, 'scopePrefix=engine/generation');
      return evs.some(held(a)) && evs.some(held(b)) ? true : undefined;
    }, 'both jobs holding after their first half');
    fs.writeFileSync(go, '');
    await sse.until((c) => c.events.some(isExit), `exit of ${a} on its stream`);
    streamed = [...sse.events];
    sse.close();
    mineA = (await waitForJobEvents(t.url, a)).all;
    await waitForJobEvents(t.url, b);
  });

  it('GET /api/jobs/{id}/events answers exactly the job’s spawn, lines and exit, in order; none of the other job’s', async () => {
    const evs = await list(`/api/jobs/${a}/events`);
    expect(evs.map((e) => e.summary)).toEqual([expect.stringMatching(/^dispatch_cli spawned pid=\d+$/), ...Array.from({ length: LINES }, (_, i) => `line ${i + 1}`), 'dispatch_cli exited rc=0']);
    expect(evs).toEqual(mineA);
    // The two jobs ran at once (each held until both had started): B's lines sit between A's ids, and are left out.
    const bLines = (await allEvents(t.url, 'scopePrefix=engine/generation')).filter((e) => e.detail?.startsWith(`${b} `));
    expect(bLines).toHaveLength(LINES);
    const first = Number(evs[0]!.id);
    const last = Number(evs[evs.length - 1]!.id);
    expect(bLines.some((e) => Number(e.id) > first && Number(e.id) < last)).toBe(true);
    expect(await list(`/api/jobs/${b}/events`)).toEqual((await waitForJobEvents(t.url, b)).all);
  });

  it('GET /api/events?proposalId= answers the same; the stream with proposalId replayed and went on live with the same events', async () => {
    const jobEvents = await list(`/api/jobs/${a}/events`);
    expect(await list(`/api/events?proposalId=${a}`)).toEqual(jobEvents);
    expect(streamed).toEqual(jobEvents);
  });

  it('takes the cursor, limit and filters of /api/events', async () => {
    const all = await list(`/api/jobs/${a}/events`);
    expect(ids(await list(`/api/jobs/${a}/events?limit=2`))).toEqual(ids(all.slice(-2)));
    expect(ids(await list(`/api/jobs/${a}/events?sinceId=${all[0]!.id}&limit=3`))).toEqual(ids(all.slice(1, 4)));
    expect(ids(await list(`/api/jobs/${a}/events?sinceId=${all[all.length - 1]!.id}`))).toEqual([]);
    expect(ids(await list(`/api/jobs/${a}/events?severities=success`))).toEqual(ids(all.filter(isExit)));
    expect(ids(await list(`/api/events?proposalId=${a}&severities=success&severities=info&limit=500`))).toEqual(ids(all));
    expect(ids(await list(`/api/jobs/${a}/events?scopePrefix=chat/`))).toEqual([]);
  });

  it('includes the decisions on the job’s proposal', async () => {
    const res = await t.post(`/api/proposals/${a}/approve`, {});
    expect(res.status).toBe(200);
    const evs = await list(`/api/jobs/${a}/events?scopePrefix=chat/`);
    expect(evs).toHaveLength(1);
    expect(evs[0]!.payload).toMatchObject({ proposal_id: a, decision: 'approved' });
    expect(ids(await list(`/api/events?proposalId=${a}&scopePrefix=chat/`))).toEqual(ids(evs));
    expect(await list(`/api/jobs/${b}/events?scopePrefix=chat/`)).toEqual([]);
  });

  it('resumes the stream from Last-Event-ID with the proposalId filter: only the job’s later events', async () => {
    const all = await list(`/api/jobs/${a}/events`);
    const sse = new SseClient(`${t.url}/api/events/stream?proposalId=${a}`, { 'Last-Event-ID': all[0]!.id });
    await sse.until((c) => c.events.length >= all.length - 1, 'replay of the job');
    sse.close();
    expect(ids(sse.events)).toEqual(ids(all.slice(1)));
  });

  it('answers 404 for an unknown job, 400 for a malformed id, 422 for a bad cursor or limit', async () => {
    await expectError('/api/jobs/gen_000000000000/events', 404, 'unknown_job');
    await expectError('/api/jobs/bad..id/events', 400, 'invalid_id');
    await expectError(`/api/jobs/${a}/events?limit=0`, 422, 'validation_failed');
    await expectError(`/api/jobs/${a}/events?sinceId=x`, 422, 'validation_failed');
    await expectError('/api/events?proposalId=a..b', 400, 'invalid_id');
    await expectError('/api/events/stream?proposalId=-x', 400, 'invalid_id');
  });
});

describe('the stream with proposalId, live', () => {
  it('delivers the events about that proposal and no others', async () => {
    const create = async (title: string) => {
      const res = await t.post('/api/proposals', { title });
      expect(res.status).toBe(201);
      return ((await res.json()) as { proposalId: string }).proposalId;
    };
    const p = await create('watched');
    const q = await create('other');
    const sse = new SseClient(`${t.url}/api/events/stream?proposalId=${p}`);
    // The retry line is written once the client is subscribed.
    await sse.until((c) => c.frames.some((f) => f.retry !== undefined), 'stream open');
    expect((await t.post(`/api/proposals/${q}/approve`, {})).status).toBe(200);
    expect((await t.post(`/api/proposals/${p}/reject`, {})).status).toBe(200);
    await sse.until((c) => c.events.length >= 1, 'decision on the watched proposal');
    sse.close();
    expect(sse.events.map((e) => [e.payload.proposal_id, e.payload.decision])).toEqual([[p, 'rejected']]);
  });
});

describe('a state database stored before the proposalId filter', () => {
  it('is upgraded at start-up: a job’s stored lines and exit are found by its id', async () => {
    const { tmp, stateDir } = makeTempStore('empty');
    const file = `${stateDir}/console-state.db`;
    // The schema as it was (migrations only: the event segment has no proposal_id column yet).
    openStateDb(file).close();
    const db = new Database(file);
    const id = 'gen_0123456789ab';
    const other = 'gen_ba9876543210';
    const ev = (n: number, summary: string, detail: string | null, payload: object, severity = 'info') =>
      JSON.stringify({ id: String(n), ts: '2026-01-01T00:00:00.000Z', severity, scope: 'engine/generation', summary, detail, payload });
    const rows: [number, string, string][] = [
      [1, 'info', ev(1, 'dispatch_cli spawned pid=10', null, { proposal_id: id, argv: ['node'] })],
      [2, 'info', ev(2, 'hello', `${id} stdout line 1`, { source: 'dispatch_cli' })],
      [3, 'info', ev(3, 'not mine', `${other} stdout line 1`, { source: 'dispatch_cli' })],
      [4, 'warning', ev(4, 'oops', `${id} stderr line 1`, { source: 'dispatch_cli' }, 'warning')],
      [5, 'info', 'not JSON'],
      [6, 'success', ev(6, 'dispatch_cli exited rc=0', null, { proposal_id: id, rc: 0 }, 'success')],
    ];
    const insert = db.prepare(`INSERT INTO event_segment_1 (id, severity, scope, data) VALUES (?, ?, 'engine/generation', ?)`);
    for (const r of rows) insert.run(...r);
    db.prepare(
      `INSERT INTO jobs (proposal_id, project_id, pid, argv, state, started_at, ended_at, rc) VALUES (?, 'p', 10, '["node"]', 'exited ok', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:01.000Z', 0)`,
    ).run(id);
    db.close();

    const old = await startTestService({ tmp });
    try {
      const evs = await fetch(`${old.url}/api/jobs/${id}/events`).then((r) => r.json() as Promise<EngineEvent[]>);
      expect(ids(evs)).toEqual(['1', '2', '4', '6']);
      const check = new Database(file, { readonly: true });
      try {
        // The runs of the old rows (an event about another proposal or none ends one); no index.
        expect(check.prepare(`SELECT proposal_id, first_id, last_id FROM event_segment_1_runs ORDER BY first_id`).all()).toEqual([
          { proposal_id: id, first_id: 1, last_id: 2 },
          { proposal_id: other, first_id: 3, last_id: 3 },
          { proposal_id: id, first_id: 4, last_id: 4 },
          { proposal_id: id, first_id: 6, last_id: 6 },
        ]);
        expect(check.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event_segment_1'`).all()).toEqual([]);
      } finally {
        check.close();
      }
    } finally {
      await old.close();
    }
  });
});
