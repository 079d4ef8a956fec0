/**
 * Crash and restart (README, "Generation jobs": `lost`; api-decisions.md,
 * Events: ids never reused after a restart). The compiled service runs as a separate process
 * with 16 jobs of rel-c-tree.mjs: each job is a tree of five processes, two of them in
 * sessions of their own and one whose parent is gone (a double fork). The service is killed
 * with SIGKILL, so nothing is flushed, closed or killed by it; then a new service starts on
 * the same state directory. It must mark every job recorded as running `lost` with a failure
 * event, kill every process of every job (none may survive, wherever it went), open the
 * database cleanly, and hand out event ids above every id seen before the crash; stream
 * clients of the dead service resume with Last-Event-ID, without gap or duplicate.
 *
 * The crash comes at three points: during a flood of lines, right after the 202s (the trees
 * are still being built), and during a graceful shutdown (SIGTERM, then SIGKILL before the
 * jobs that ignore SIGTERM were killed). Half of the tools exit when their output pipe
 * breaks, as real tools do, so their descendants lose their parent.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database, { type Db } from '../../src/state/sqlite/binding.js';
import { afterEach, expect, it } from 'vitest';
import { allEvents, jobEventProblems, waitFor, waitForJobEvents, type EngineEvent, type JobView } from '../helpers/events.js';
import { fixture, makeTempStore, startTestService } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';
import { isGone, killAll, request, requireBuild, startServiceProcess, tokenProcesses, type ServiceProcess } from '../fixtures/rel-c-harness.js';

const JOBS = 16;
const TOOL = fixture('rel-c-tree.mjs');
/** Descendants of each job that carry the token: worker, sub, daemon, session. */
const DESCENDANTS = 4;

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});
const onCleanup = (fn: () => unknown) => cleanups.push(fn);

/** Stream filters of the clients connected before the crash. */
const FILTERS = ['', 'scopePrefix=engine/generation', 'severities=failure&severities=success'];

type CrashPoint = 'flood' | 'after-202' | 'during-shutdown';

interface Round {
  point: CrashPoint;
  jobs: number;
  lost: number;
  killed: number;
  orphans: number;
  seenLive: number;
  maxSeen: number;
  reserved: number;
  firstNew: number;
  resumed: number;
}

/** Model words of job `i`: half keep running when their pipe breaks; a quarter ignore SIGTERM. */
function modelOf(i: number): string | undefined {
  const words = [...(i % 2 === 0 ? ['keep-on-epipe'] : []), ...(i % 4 < 2 ? ['ignore-term'] : [])];
  return words.length > 0 ? words.join('+') : undefined;
}

async function round(point: CrashPoint): Promise<Round> {
  const store = makeTempStore('sample');
  onCleanup(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const token = `rel-c-${randomBytes(6).toString('hex')}`;
  const leaders: number[] = [];
  onCleanup(() => killAll([...leaders, ...tokenProcesses(token)]));
  const env = {
    DISPATCH_CLI: TOOL,
    REL_C_TOKEN: token,
    // A flood: 10 lines every 10 ms per job, 16,000 lines/s in all.
    REL_C_BATCH: point === 'flood' ? '10' : '1',
    REL_C_INTERVAL_MS: '10',
    CONSOLE_KILL_GRACE_MS: '20000',
  };
  const first = await startServiceProcess(store, env, onCleanup);

  const clients = FILTERS.map((q) => new SseClient(`${first.url}/api/events/stream${q ? `?${q}` : ''}`));
  onCleanup(() => {
    for (const c of clients) c.close();
  });
  for (const c of clients) await c.until((s) => s.frames.length > 0, 'the retry frame');

  const accepted = await Promise.all(Array.from({ length: JOBS }, (_, i) => request(first.url, 'POST', '/api/proposals/generate', { project: 'harbor-lights', model: modelOf(i) })));
  for (const a of accepted) expect(a.status, JSON.stringify(a.json)).toBe(202);
  const ids = accepted.map((a) => a.json.proposalId as string);
  leaders.push(...accepted.map((a) => a.json.pid as number));

  const all = clients[0] as SseClient;
  if (point === 'flood') {
    // Every tree complete, then thousands of lines more: past the first block of reserved
    // ids, so the crash leaves a reservation the next run must skip.
    await all.until((c) => c.events.filter((e) => e.summary.startsWith('tree ')).length === JOBS, 'the 16 trees');
    const mark = all.events.length;
    await all.until((c) => c.events.length >= mark + 3000 && c.events.length > 12_000, '12,000 lines of the flood');
  } else if (point === 'during-shutdown') {
    await all.until((c) => c.events.filter((e) => e.summary.startsWith('tree ')).length === JOBS, 'the 16 trees');
    first.child.kill('SIGTERM');
    // The jobs that do not ignore SIGTERM end and their exits are published; the others
    // wait for a SIGKILL 20 s away that never comes.
    await waitFor(async () => {
      const rows = readDb(store.stateDir, (db) => db.prepare(`select count(*) as n from jobs where state != 'running'`).get() as { n: number });
      return rows.n >= JOBS / 2 ? true : undefined;
    }, 'the exits of the jobs that end on SIGTERM');
  }
  await crash(first);
  await Promise.all(clients.map((c) => c.done));
  const lastSeen = clients.map((c) => (c.events.length > 0 ? Number((c.events[c.events.length - 1] as EngineEvent).id) : 0));
  const seenIds = clients.flatMap((c) => c.events.map((e) => Number(e.id)));
  // A loop, not a spread: tens of thousands of arguments overflow the stack.
  const maxSeen = seenIds.reduce((m, id) => Math.max(m, id), 0);

  // The dead service's jobs outlive it (own process groups). Wait until every tree is
  // complete: right after the 202s the tools are still starting their descendants.
  // After a shutdown began, only the jobs that ignore SIGTERM are left (and whatever the
  // others leaked).
  const expected = (point === 'during-shutdown' ? JOBS / 2 : JOBS) * DESCENDANTS;
  const survivors = await waitFor(() => {
    const found = tokenProcesses(token);
    return found.length >= expected ? found : undefined;
  }, `the ${expected} descendants of the jobs`);
  const alive = [...new Set([...survivors, ...leaders.filter((p) => !isGone(p))])];

  // The state exactly as the crash left it (read-only).
  const before = readDb(store.stateDir, (db) => ({
    reserved: Number((db.prepare(`select value from meta where key = 'event_id_reserved'`).get() as { value: string }).value),
    maxStored: (db.prepare('select max(id) as m from events').get() as { m: number }).m,
    running: (db.prepare(`select proposal_id as id from jobs where state = 'running'`).all() as { id: string }[]).map((r) => r.id),
  }));
  expect(before.maxStored).toBeGreaterThanOrEqual(maxSeen); // stored before delivered
  if (point !== 'during-shutdown') expect(before.running.sort()).toEqual([...ids].sort());
  // A job's state agrees with its events as the crash left them: each job the database has
  // ended has its exit event stored, with its rc (they commit together), and none still running has one.
  const crashed = readDb(store.stateDir, (db) => ({
    ended: db.prepare(`select proposal_id as id, rc from jobs where state != 'running' order by proposal_id`).all() as { id: string; rc: number | null }[],
    exits: db
      .prepare(
        `select json_extract(data, '$.payload.proposal_id') as id, json_extract(data, '$.payload.rc') as rc from events where json_extract(data, '$.summary') like 'dispatch_cli exited rc=%' order by id`,
      )
      .all() as { id: string; rc: number | null }[],
  }));
  expect(crashed.exits.sort((x, y) => x.id.localeCompare(y.id))).toEqual(crashed.ended);

  const second = await startServiceProcess(store, env, onCleanup);

  // 1. Every job recorded as running is lost, with one failure event each.
  const jobs = (await request(second.url, 'GET', '/api/jobs?limit=100')).json as { proposalId: string; state: string; endedAt: string | null }[];
  expect(jobs).toHaveLength(JOBS);
  for (const id of before.running) expect(jobs.find((j) => j.proposalId === id)).toMatchObject({ state: 'lost', endedAt: expect.any(String) });
  for (const j of jobs) expect(j.state, j.proposalId).not.toBe('running');
  const generation = await allEvents(second.url, 'scopePrefix=engine/generation', String(before.maxStored));
  const lostEvents = generation.filter((e) => e.summary.startsWith('dispatch_cli lost'));
  expect(lostEvents.map((e) => e.payload.proposal_id).sort()).toEqual([...before.running].sort());
  for (const e of lostEvents) expect(e).toMatchObject({ severity: 'failure', scope: 'engine/generation' });
  // Every job's state agrees with its events after the restart too.
  const listed = (await request(second.url, 'GET', '/api/jobs?limit=100')).json as JobView[];
  expect((await Promise.all(listed.map((j) => jobEventProblems(second.url, j)))).flat()).toEqual([]);

  // 2. No process of any job survives, whatever group or session it moved to.
  await waitFor(() => (alive.every(isGone) ? true : undefined), 'every process of the lost jobs to end').catch(() => {
    const left = alive.filter((p) => !isGone(p));
    throw new Error(`${left.length} of ${alive.length} processes of the lost jobs survived the restart: ${left.join(' ')}`);
  });
  expect(tokenProcesses(token)).toEqual([]);

  // 3. Event ids keep increasing: every id handed out by the new run is above every id seen or
  // reserved before the crash.
  const fresh = await allEvents(second.url, '', String(before.maxStored));
  expect(fresh.length).toBeGreaterThanOrEqual(before.running.length);
  for (const e of fresh) expect(Number(e.id)).toBeGreaterThan(Math.max(maxSeen, before.reserved));

  // 4. The clients of the dead service resume where they stopped: every stored event after
  // their last id, in order, none twice, then the new run's events.
  let resumed = 0;
  for (const [i, q] of FILTERS.entries()) {
    const since = lastSeen[i] as number;
    const r = new SseClient(`${second.url}/api/events/stream${q ? `?${q}` : ''}`, { 'Last-Event-ID': String(since) });
    onCleanup(() => r.close());
    const lostIds = new Set(lostEvents.map((e) => e.id));
    await r.until((c) => [...lostIds].every((id) => c.events.some((e) => e.id === id)), `the lost events on resumed stream ${i}`);
    r.close();
    const got = r.events.map((e) => Number(e.id));
    expect(
      got.every((id, k) => id > since && (k === 0 || id > (got[k - 1] as number))),
      `stream ${i}: ascending ids after ${since}`,
    ).toBe(true);
    const stored = (await allEvents(second.url, q, String(since))).slice(0, got.length).map((e) => Number(e.id));
    expect(got, `stream ${i}: every stored event after ${since}`).toEqual(stored);
    resumed += got.length;
  }

  // 5. The database is sound, read by a separate read-only connection while the service runs.
  expect(readDb(store.stateDir, (db) => db.pragma('integrity_check', { simple: true }))).toBe('ok');

  second.child.kill('SIGTERM');
  expect(await second.exited).toEqual([0, null]);
  return {
    point,
    jobs: JOBS,
    lost: lostEvents.length,
    killed: alive.length,
    orphans: tokenProcesses(token).length,
    seenLive: new Set(seenIds).size,
    maxSeen,
    reserved: before.reserved,
    firstNew: fresh.reduce((m, e) => Math.min(m, Number(e.id)), Infinity),
    resumed,
  };
}

async function crash(svc: ServiceProcess): Promise<void> {
  svc.child.kill('SIGKILL');
  expect((await svc.exited)[1]).toBe('SIGKILL');
}

function readDb<T>(stateDir: string, fn: (db: Db) => T): T {
  const db = new Database(path.join(stateDir, 'console-state.db'), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function report(r: Round): void {
  console.log(
    `crash-restart [${r.point}]: ${r.jobs} jobs, ${r.lost} marked lost, ${r.killed} processes killed, ${r.orphans} orphans; ` +
      `${r.seenLive} events seen live, ids ..${r.maxSeen} (reserved ..${r.reserved}) then ${r.firstNew}..; ` +
      `${FILTERS.length} streams resumed with ${r.resumed} events, no duplicate; integrity ok`,
  );
}

it('SIGKILL during a flood of lines: jobs lost, trees killed, ids above the reservation, streams resume', async () => {
  requireBuild();
  report(await round('flood'));
});

it('SIGKILL right after the 202s, while the trees are still being built', async () => {
  requireBuild();
  report(await round('after-202'));
});

it('SIGKILL during a graceful shutdown, before the SIGKILL escalation', async () => {
  requireBuild();
  const r = await round('during-shutdown');
  expect(r.lost).toBe(JOBS / 2); // the ones that ignore SIGTERM
  report(r);
});

it('a tool that exits by itself takes its whole tree with it, daemons and other sessions included', async () => {
  // The orphans a crash would find start here: what a job leaves running when it ends.
  const token = `rel-c-${randomBytes(6).toString('hex')}`;
  onCleanup(() => killAll(tokenProcesses(token)));
  const t = await startTestService({ env: { DISPATCH_CLI: TOOL, REL_C_TOKEN: token } });
  onCleanup(() => t.close());
  const started = await Promise.all([0, 1, 2, 3].map(() => t.post('/api/proposals/generate', { project: 'harbor-lights', model: 'exit' })));
  const ids: string[] = [];
  for (const r of started) {
    expect(r.status).toBe(202);
    ids.push(((await r.json()) as { proposalId: string }).proposalId);
  }
  const trees: number[] = [];
  for (const id of ids) {
    const { exit, lines } = await waitForJobEvents(t.url, id);
    expect(exit.summary).toBe('dispatch_cli exited rc=0');
    // tree <leader> <worker> <sub> <daemon> <session>
    trees.push(
      ...(lines
        .find((e) => e.summary.startsWith('tree '))
        ?.summary.split(' ')
        .slice(2)
        .map(Number) ?? []),
    );
  }
  expect(trees).toHaveLength(ids.length * DESCENDANTS);
  await waitFor(() => (trees.every(isGone) ? true : undefined), 'every descendant of the exited jobs to end').catch(() => {
    throw new Error(`left running after their jobs exited: ${trees.filter((p) => !isGone(p)).join(' ')}`);
  });
  expect(tokenProcesses(token)).toEqual([]);
  console.log(`crash-restart [exit]: ${ids.length} jobs exited rc 0, ${trees.length} descendants (same group, other sessions, double-forked) ended with them, 0 orphans`);
});
