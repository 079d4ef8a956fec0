/**
 * The job I/O thread under load, the compiled service as its own process (src/supervisor/job-io.ts):
 * - events of console writes (made on the main thread) and job lines (read on the thread) interleave,
 *   and every stream client receives them all, in strictly increasing id order, exactly as stored (streams opened
 *   during the storm too); neither the writes nor the openings make the main thread wait (blocking) for the writer;
 * - a SIGTERM with 64 jobs running drains them: each job's last words, printed in answer to the
 *   signal, are stored before its exit event, no line is missing, and none is left `running` or `lost`.
 * No timing is asserted.
 */
import fs from 'node:fs';
import { afterEach, beforeAll, expect, it } from 'vitest';
import { allEvents, waitFor, type EngineEvent } from '../helpers/events.js';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { TEST_TIMEOUT_MS } from '../helpers/ceilings.js';
import { killMarked } from '../process/helpers.js';

const cleanups: (() => unknown)[] = [];
beforeAll(() => requireBuild());
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

const post = (url: string, path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

/** Whether ids strictly increase. */
const increasing = (events: readonly EngineEvent[]) => events.every((e, k) => k === 0 || Number(e.id) > Number(events[k - 1]!.id));

it('interleaves console writes and job lines: every stream client gets every event in strictly increasing id order, as stored', async () => {
  const store = makeTempStore();
  cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const svc = await startServiceProcess(store, { DISPATCH_CLI: fixture('load-tool.mjs'), LOAD_LINES: '2000' }, (fn) => cleanups.push(fn));
  const clients = [0, 1].map(() => new SseClient(`${svc.url}/api/events/stream`));
  cleanups.push(() => {
    for (const c of clients) c.close();
  });
  await Promise.all(clients.map((c) => c.until((x) => x.frames.length > 0, 'the retry frame')));
  const startId = Number((await allEvents(svc.url)).at(-1)?.id ?? 0);
  const writerStats = async () => ((await (await fetch(`${svc.url}/api/system-status`)).json()) as { database: { eventWriter: { waits: number; idleWaits: number } } }).database.eventWriter;
  const before = await writerStats();

  const JOBS = 16;
  const answers = await Promise.all(Array.from({ length: JOBS }, (_v, i) => post(svc.url, '/api/proposals/generate', { project: 'harbor-lights', shotId: `sh${i}` })));
  expect(answers.map((r) => r.status)).toEqual(Array(JOBS).fill(202));
  const ids = ((await Promise.all(answers.map((r) => r.json()))) as { proposalId: string }[]).map((a) => a.proposalId);
  for (const id of ids) cleanups.push(() => killMarked(`CONSOLE_JOB_ID=${id}`));
  // Console writes all the time the jobs print, two at a time.
  let writes = 0;
  const exits = (c: SseClient) => c.events.filter((e) => e.summary.startsWith('dispatch_cli exited')).length;
  const writers = [0, 1].map(async (w) => {
    while (exits(clients[0]!) < JOBS) {
      const r = await post(svc.url, '/api/proposals', { title: `write ${w}.${writes++}` });
      expect(r.status).toBe(201);
      await r.body?.cancel();
    }
  });
  // Streams opened during the storm, while lines queue for the writer thread: one resuming from the start, one live only.
  await clients[0]!.until((x) => x.events.length >= 1000, '1,000 events');
  const late = [new SseClient(`${svc.url}/api/events/stream`, { 'Last-Event-ID': String(startId) }), new SseClient(`${svc.url}/api/events/stream`)];
  cleanups.push(() => {
    for (const c of late) c.close();
  });
  await Promise.all(clients.map((c) => c.until((x) => exits(x) === JOBS, 'every exit event')));
  await Promise.all(writers);
  const last = Number((await allEvents(svc.url)).at(-1)!.id);
  await Promise.all([...clients, ...late].map((c) => c.until((x) => Number(x.events.at(-1)?.id ?? 0) >= last, 'the last write’s event')));
  // Neither the console writes (a write waits for the append on the thread without blocking: EventLog.quiesce), the
  // jobs' records, nor the streams' openings (they start after the newest stored event) made the main thread wait.
  const after = await writerStats();
  expect(after.waits - before.waits, 'blocking waits for the writer thread').toBe(0);

  const stored = (await allEvents(svc.url, '', String(startId))).filter((e) => Number(e.id) <= last);
  const lines = stored.filter((e) => e.scope === 'engine/generation' && / (stdout|stderr) line /.test(e.detail ?? ''));
  const consoleEvents = stored.filter((e) => e.scope !== 'engine/generation');
  expect(lines.length).toBe(JOBS * (2000 + 200));
  expect(consoleEvents.length).toBeGreaterThanOrEqual(writes);
  // Interleaved: console events fall between the first and the last job line.
  const [firstLine, lastLine] = [Number(lines[0]!.id), Number(lines.at(-1)!.id)];
  expect(consoleEvents.filter((e) => Number(e.id) > firstLine && Number(e.id) < lastLine).length).toBeGreaterThan(0);
  for (const [i, c] of [...clients, late[0]!].entries()) {
    const got = c.events.filter((e) => Number(e.id) > startId && Number(e.id) <= last);
    expect(increasing(got), `client ${i}: ids strictly increase`).toBe(true);
    expect(
      got.map((e) => e.id),
      `client ${i}: exactly what is stored`,
    ).toEqual(stored.map((e) => e.id));
  }
  // The live-only stream: from its first event on, every stored one, in order (no gap, no duplicate).
  const live = late[1]!.events.filter((e) => Number(e.id) <= last).map((e) => e.id);
  expect(live.length).toBeGreaterThan(0);
  expect(live).toEqual(stored.map((e) => e.id).slice(stored.findIndex((e) => e.id === live[0])));
  // Each job's lines in order on each pipe.
  for (const id of ids) {
    const numbers = (pipe: string) => lines.filter((e) => e.detail!.startsWith(`${id} ${pipe} line `)).map((e) => Number(e.detail!.split(' ').at(-1)));
    expect(numbers('stdout')).toEqual(Array.from({ length: 2000 }, (_v, k) => k + 1));
    expect(numbers('stderr')).toEqual(Array.from({ length: 200 }, (_v, k) => k + 1));
  }
});

it(
  'drains 64 running jobs at SIGTERM: every job’s last words stored before its exit, no line missing, none left running or lost',
  async () => {
    const store = makeTempStore();
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    // On a loaded machine the 64 take long to start and to exit: retention far above what they print meanwhile (every
    // line is read back), and a grace for their SIGTERM long enough that none is killed (each exits on it, rc 0).
    const env = { DISPATCH_CLI: fixture('lines-until-term.mjs'), CONSOLE_MAX_RUNNING_JOBS: '64', CONSOLE_EVENT_RETENTION: '5000000', CONSOLE_KILL_GRACE_MS: '60000' };
    const svc = await startServiceProcess(store, env, (fn) => cleanups.push(fn));
    const JOBS = 64;
    const answers = await Promise.all(
      Array.from({ length: JOBS }, async () => {
        const r = await post(svc.url, '/api/proposals/generate', { project: 'harbor-lights' });
        return { status: r.status, body: (await r.json()) as { proposalId: string } };
      }),
    );
    // Each refusal with its answer, so a failure says why.
    expect(answers.filter((a) => a.status !== 202)).toEqual([]);
    const ids = answers.map((a) => a.body.proposalId);
    for (const id of ids) cleanups.push(() => killMarked(`CONSOLE_JOB_ID=${id}`));
    // Every job printing.
    await waitFor(async () => {
      const jobs = (await (await fetch(`${svc.url}/api/jobs?limit=100`)).json()) as { proposalId: string; stdoutLines: number }[];
      return ids.every((id) => (jobs.find((j) => j.proposalId === id)?.stdoutLines ?? 0) > 0) ? true : undefined;
    }, 'every job to print');

    svc.child.kill('SIGTERM');
    const [code] = await svc.exited;
    expect(code).toBe(0);

    // The next start finds every job ended by the shutdown, nothing to mark lost.
    const again = await startServiceProcess(store, env, (fn) => cleanups.push(fn));
    const jobs = (await (await fetch(`${again.url}/api/jobs?limit=100`)).json()) as { proposalId: string; state: string; exitReason: string; stdoutLines: number }[];
    const events = await allEvents(again.url, 'scopePrefix=engine/generation');
    for (const id of ids) {
      const job = jobs.find((j) => j.proposalId === id);
      expect(job, id).toMatchObject({ state: 'exited ok', exitReason: 'shutdown' });
      const mine = events.filter((e) => e.payload.proposal_id === id || e.detail?.startsWith(`${id} `));
      const out = mine.filter((e) => e.detail?.startsWith(`${id} stdout line `));
      expect(out.map((e) => Number(e.detail!.split(' ').at(-1)))).toEqual(Array.from({ length: job!.stdoutLines }, (_v, k) => k + 1));
      const ticks = out.slice(0, -1).map((e) => e.summary);
      expect(ticks).toEqual(Array.from({ length: ticks.length }, (_v, k) => `tick ${k + 1}`));
      expect(out.at(-1)!.summary).toBe(`term after ${ticks.length}`);
      expect(mine.at(-1)!.summary).toBe('dispatch_cli exited rc=0');
      expect(mine.filter((e) => e.summary.startsWith('dispatch_cli exited'))).toHaveLength(1);
    }
    expect(events.filter((e) => e.summary.startsWith('dispatch_cli lost'))).toEqual([]);
  },
  // 64 jobs, a restart and every line read back: on a loaded machine longer than the default ceiling (a safety net).
  2 * TEST_TIMEOUT_MS,
);
