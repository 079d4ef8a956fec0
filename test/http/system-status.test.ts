/**
 * `GET /api/system-status`: what an operator reads during a generation
 * storm, answering while 64 jobs stream output.
 */
import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const status = async (s: TestService) => (await (await s.get('/api/system-status')).json()) as any;

describe('GET /api/system-status', () => {
  it('reports version, uptime, jobs, bus, workers, terminals, guards, fallbacks, write proxy and database', async () => {
    t = await startTestService({ env: { DISPATCH_CLI: fixture('print-lines.mjs') } });
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' });
    const { proposalId } = (await res.json()) as { proposalId: string };
    await waitFor(async () => ((await status(t!)).jobs.running === 0 ? true : undefined), 'the job to exit');
    const s = await status(t);
    expect(s.version).toBe('2.0.0');
    expect(typeof s.uptimeSeconds).toBe('number');
    expect(s.jobs).toMatchObject({ running: 0, maxRunning: 64, byState: { running: 0, 'exited ok': 1, 'exited failed': 0, lost: 0 } });
    expect(s.jobs.recent[0]).toMatchObject({
      proposalId,
      pid: expect.any(Number),
      state: 'exited ok',
      startedAt: expect.any(String),
      endedAt: expect.any(String),
      rc: 0,
      stdoutLines: 3,
      stderrLines: 1,
    });
    expect(s.bus).toMatchObject({ subscribers: 0, retention: 200_000 });
    expect(s.bus.lastEventId).toMatch(/^\d+$/);
    expect(s.workers).toMatchObject({ threads: expect.any(Number), queueSize: expect.any(Number), completed: expect.any(Number) });
    expect(s.terminals).toEqual([]);
    expect(s.guards.fallbacks.map((f: { name: string }) => f.name).sort()).toEqual(['proposal_id_not_pending', 'take_id_not_on_disk']);
    expect(s.fallbacks).toEqual({ proposal_id_not_pending: 0, take_id_not_on_disk: 0 });
    expect(s.writeProxy).toMatchObject({ enabled: false });
    expect(s.database).toEqual({
      backend: 'sqlite',
      file: t.config.stateDbPath,
      binding: expect.any(String),
      checkpointFailures: 0,
      replayThread: { tid: expect.any(Number), nice: 5 },
      eventWriter: {
        tid: expect.any(Number),
        nice: 5,
        appends: expect.any(Number),
        rows: expect.any(Number),
        waits: expect.any(Number),
        waitedMs: expect.any(Number),
        idleWaits: expect.any(Number),
        idleWaitedMs: expect.any(Number),
        youngGenerationMb: 8,
      },
      reachable: true,
    });
    // The event writer thread too, at CONSOLE_EVENT_WRITER_THREAD_NICE (5 by default).
    const writerStat = fs.readFileSync(`/proc/self/task/${s.database.eventWriter.tid}/stat`, 'utf8');
    expect(Number(writerStat.split(') ')[1]?.split(' ')[16])).toBe(5);
    // The replay thread is a thread of the service (here, of this process), at CONSOLE_SSE_REPLAY_THREAD_NICE (5 by default).
    const replayStat = fs.readFileSync(`/proc/self/task/${s.database.replayThread.tid}/stat`, 'utf8');
    expect(Number(replayStat.split(') ')[1]?.split(' ')[16])).toBe(5);
    // The SQLite binding this runtime loads: better-sqlite3 12 on Node.js 20, 13 (Node-API) on 22 and newer.
    expect(s.database.binding).toMatch(Number(process.versions.node.split('.')[0]) >= 22 ? /^better-sqlite3 13\./ : /^better-sqlite3 12\./);
    expect(s.instances).toEqual([]);
    expect(s.instance).toBeNull();
    // Every bound by the variable that sets it.
    expect(s.limits).toMatchObject({ CONSOLE_MAX_BODY_BYTES: 1024 * 1024, CONSOLE_CLICKS_PER_PROJECT: 1000, CONSOLE_LINE_MAX_BYTES: 16384 });
    // The memory now; the test runner's allocator (glibc's), MALLOC_ARENA_MAX and MALLOC_CONF unset here (the start script sets them).
    expect(s.memory).toEqual({ rssBytes: expect.any(Number), heapUsedBytes: expect.any(Number), allocator: 'libc', mallocArenaMax: null, mallocConf: null });
    // The job I/O thread's young generation: 8 MB by default, as set and as in force.
    expect(s.limits.CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB).toBe(8);
    expect(s.jobs.thread.youngGenerationMb).toBe(8);
    // The threads' answer limit (a thread answering nothing this long is taken for dead): 60 s by default.
    expect(s.limits.CONSOLE_THREAD_ANSWER_LIMIT_MS).toBe(60_000);
  });

  it('reports the job I/O thread’s young generation as CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB sets it, and V8’s own for 0; MALLOC_ARENA_MAX and MALLOC_CONF as given', async () => {
    t = await startTestService({ env: { CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: '16', MALLOC_ARENA_MAX: '4', MALLOC_CONF: 'narenas:2', CONSOLE_THREAD_ANSWER_LIMIT_MS: '5000' } });
    let s = await status(t);
    // MALLOC_ARENA_MAX and MALLOC_CONF as the process was started with.
    expect(s.memory.mallocArenaMax).toBe('4');
    expect(s.memory.mallocConf).toBe('narenas:2');
    expect(s.limits.CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB).toBe(16);
    expect(s.limits.CONSOLE_THREAD_ANSWER_LIMIT_MS).toBe(5000);
    expect(s.jobs.thread.youngGenerationMb).toBe(16);
    await t.close();
    t = await startTestService({ env: { CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: '0' } });
    s = await status(t);
    expect(s.limits.CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB).toBe(0);
    // V8 sizes it from the heap: some positive figure, reported as in force.
    expect(s.jobs.thread.youngGenerationMb).toBeGreaterThan(0);
  });

  it('answers while 64 jobs stream output', async () => {
    t = await startTestService({ env: { DISPATCH_CLI: fixture('load-tool.mjs'), LOAD_LINES: '2000' } });
    const answers = await Promise.all(Array.from({ length: 64 }, () => t!.post('/api/proposals/generate', { project: 'harbor-lights' })));
    expect(answers.map((a) => a.status)).toEqual(Array(64).fill(202));
    const times: number[] = [];
    const running: number[] = [];
    for (;;) {
      const t0 = performance.now();
      const r = await rawRequest(t.url, '/api/system-status');
      times.push(performance.now() - t0);
      expect(r.status).toBe(200);
      const s = r.json();
      running.push(s.jobs.running);
      expect(s.jobs.recent.length).toBeGreaterThan(0);
      if (s.jobs.running === 0) break;
    }
    expect(Math.max(...running)).toBeGreaterThan(0);
    expect(Math.max(...running)).toBeLessThanOrEqual(64);
    times.sort((a, b) => a - b);
    console.log(
      `system-status under 64 streaming jobs: ${times.length} answers, median ${times[Math.floor(times.length / 2)]!.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms, most jobs running at once ${Math.max(...running)}`,
    );
  });
});
