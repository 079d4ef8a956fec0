/**
 * The job I/O thread through its client (src/supervisor/job-io.ts): lines in each stream's order,
 * as texts or as their events' JSON (`encode`), held while a bus gate holds and none handed on
 * meanwhile, the thread's own figures and heap limit, and its crash: reported once, pending spawns refused.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WORKER_FILES } from '../../src/config/paths.js';
import { ProcessSpawnError } from '../../src/process/index.js';
import { JobIo } from '../../src/supervisor/index.js';
import { JOB_IO_YOUNG_GENERATION_MB } from '../../src/supervisor/job-io.js';
import type { LineHold } from '../../src/supervisor/output-gate.js';
import { eventHead, EventJson } from '../../src/bus/event-json.js';
import { LINE_PAYLOAD, lineDetail, lineSeverity } from '../../src/supervisor/line-event.js';
import { waitFor } from '../helpers/events.js';
import { fixture } from '../helpers/service.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { killMarked } from '../process/helpers.js';

const MARK = 'JOB_IO_TEST=1';
let io: JobIo;
const deaths: Error[] = [];

beforeAll(() => {
  requireBuild();
  io = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 3, encode: false }, (err) => deaths.push(err));
});
afterAll(async () => {
  await io.close();
  await killMarked(MARK);
});

/** A gate held until released, as the supervisor's OutputGate is while the bus is behind. */
class TestGate implements LineHold {
  held = false;
  private waiting: (() => void)[] = [];
  whenReleased(resume: () => void): void {
    this.waiting.push(resume);
  }
  release(): void {
    this.held = false;
    for (const fn of this.waiting.splice(0)) fn();
  }
}

const spawnPrinter = (out: number, err: number) =>
  io.spawn({ file: process.execPath, args: [fixture('print-lines.mjs'), '--out', String(out), '--err', String(err)], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-job-io' });

it('hands on every line in each stream’s order, and reports the thread at its nice value', async () => {
  const job = await spawnPrinter(5000, 500);
  const got: [number, number, string][] = [];
  job.read((stream, n, text) => got.push([stream, n, text]));
  expect(await job.exit).toEqual({ code: 0, signal: null });
  await job.drain(1000);
  const out = got.filter(([s]) => s === 0);
  const err = got.filter(([s]) => s === 1);
  expect(out.map(([, n, t]) => `${n} ${t}`)).toEqual(Array.from({ length: 5000 }, (_v, i) => `${i + 1} out ${i + 1}`));
  expect(err.map(([, n, t]) => `${n} ${t}`)).toEqual(Array.from({ length: 500 }, (_v, i) => `${i + 1} err ${i + 1}`));
  const t = io.threadStats();
  expect(t).toMatchObject({ nice: 3, lines: 5500, queued: 0 });
  // Its short-lived objects get a small young generation (what stayed in the RSS after a storm).
  expect(io.heapLimits()?.maxYoungGenerationSizeMb).toBe(JOB_IO_YOUNG_GENERATION_MB);
  expect(t.youngGenerationMb).toBe(JOB_IO_YOUNG_GENERATION_MB);
  expect(t.tid).not.toBe(process.pid);
  expect(io.stats()).toMatchObject({ spawned: 1, refused: 0, running: 0 });
});

it('with `encode`, hands on each line as its event’s JSON after the id and time, the text the bus makes of the line read as text; the last stderr line at the drain, either way', async () => {
  const encoding = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: true }, (err) => deaths.push(err));
  // Awkward output: quotes, backslashes, control characters, multi-byte and invalid UTF-8, a line past the bound, an empty one.
  const script = `process.stdout.write(Buffer.concat([
    Buffer.from('plain\\nquote " back \\\\ tab \\t ctl \\u0001 é 😀 \\u2028\\n'),
    Buffer.from([0xff, 0xc3, 0x0a]),
    Buffer.from('x'.repeat(100) + '\\n\\n'),
  ]));
  process.stderr.write('warn 1\\nlast words " é\\n');
  process.exitCode = 3;`;
  const run = async (client: JobIo) => {
    const job = await client.spawn({ file: process.execPath, args: ['-e', script], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 64, proposalId: 'p-encoded' });
    const got: [0 | 1, number, string, boolean][] = [];
    job.read((stream, n, text, cut) => got.push([stream, n, text, cut]));
    await job.exit;
    return { got, lastStderr: (await job.drain(1000))?.exitDetail, encoded: job.encoded };
  };
  try {
    const plain = await run(io);
    const encoded = await run(encoding);
    expect(plain.encoded).toBe(false);
    expect(encoded.encoded).toBe(true);
    // Kept by the thread either way (the main thread's texts are slices of their batch's one string): the failure's detail.
    expect(plain.lastStderr).toBe('last words " é');
    expect(encoded.lastStderr).toBe('last words " é');
    expect(plain.got.filter(([s]) => s === 0)).toHaveLength(5);
    expect(plain.got.filter(([s]) => s === 1)).toHaveLength(2);
    expect(plain.got.some(([, , , cut]) => cut)).toBe(true);
    const byKey = (rows: typeof plain.got) => new Map(rows.map(([s, n, t, c]) => [`${s}:${n}`, [t, c] as const]));
    const texts = byKey(plain.got);
    const tails = byKey(encoded.got);
    expect([...tails.keys()].sort()).toEqual([...texts.keys()].sort());
    const json = new EventJson();
    for (const [key, [text, cut]] of texts) {
      const [stream, n] = key.split(':').map(Number) as [0 | 1, number];
      const [tail, tailCut] = tails.get(key) as readonly [string, boolean];
      expect(tailCut).toBe(cut);
      const event = {
        id: '17',
        ts: '2026-11-29T00:00:00.000Z',
        severity: lineSeverity(stream),
        scope: 'engine/generation',
        summary: text,
        detail: lineDetail('p-encoded', stream, n, cut, 64),
        payload: LINE_PAYLOAD,
      };
      expect(eventHead(17, event.ts) + tail).toBe(json.serialize(event));
    }
  } finally {
    await encoding.close();
  }
});

it('runs each job’s state machine on the thread: lines counted, the first stop request kept, the end decided at the drain', async () => {
  const ok = await spawnPrinter(300, 20);
  expect(ok.accepted).toBe('info');
  ok.read(() => {});
  await ok.exit;
  expect(await ok.drain(1000)).toEqual({ status: { state: 'exited ok', rc: 0, signal: null }, severity: 'success', exitReason: 'exited', exitDetail: null, stdoutLines: 300, stderrLines: 20 });

  // Stopped: the first reason told is the exit's (the signal is the caller's to send, as the supervisor does).
  const stopped = await io.spawn({ file: process.execPath, args: [fixture('lines-until-term.mjs')], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-job-io' });
  const lines: string[] = [];
  stopped.read((_s, _n, text) => lines.push(text));
  await waitFor(() => (lines.length > 0 ? true : undefined), 'a line');
  stopped.stop('cancelled');
  stopped.stop('shutdown');
  process.kill(stopped.pid, 'SIGKILL');
  await stopped.exit;
  const end = await stopped.drain(1000);
  expect(end).toMatchObject({ status: { state: 'exited failed', rc: 137, signal: 'SIGKILL' }, severity: 'failure', exitReason: 'cancelled' });
  expect(end?.stdoutLines).toBe(lines.length);
  // Ended: a late stop request changes nothing, and the thread knows the job no more.
  stopped.stop('cancelled');
});

it('hands on the nice value the spawn helper set on the job, and sets none when none is asked for', async () => {
  const autogroups = fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
  const lowered = await io.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, nice: 11, lineMaxBytes: 1024, proposalId: 'p-job-io' });
  expect(lowered.lowered).toEqual({ process: true, group: autogroups ? 'set' : 'none' });
  const stat = fs.readFileSync(`/proc/${lowered.pid}/stat`, 'utf8');
  expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])).toBe(11);
  const plain = await io.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-job-io' });
  expect(plain.lowered).toBeNull();
  for (const job of [lowered, plain]) {
    process.kill(job.pid, 'SIGKILL');
    job.read(() => {});
    await job.exit;
    await job.drain(1000);
  }
});

it('hands nothing on while a gate holds, stops reading past the window, and goes on in order once released', async () => {
  const gate = new TestGate();
  io.holdWith(gate);
  gate.held = true;
  // About 2 MB: more than the window, the thread's buffers and the socket's together.
  const job = await spawnPrinter(200_000, 0);
  const got: number[] = [];
  job.read((_s, n) => got.push(n));
  // The child cannot finish: past the window (2,048 lines) and the pipe's room nothing is read.
  await waitFor(() => (io.threadStats().queued > 0 ? true : undefined), 'lines to wait here');
  const exited = await Promise.race([job.exit.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), 500))]);
  expect(exited).toBe(false);
  expect(got).toEqual([]);
  expect(io.threadStats().queued).toBeLessThanOrEqual(2048);
  gate.release();
  await job.exit;
  await job.drain(1000);
  expect(got.length).toBe(200_000);
  expect(got.every((n, i) => n === i + 1)).toBe(true);
});

it('paces a burst of spawn orders posted at once on the thread: each job started in call order, a refused one holding none', async () => {
  const orders = Array.from({ length: 12 }, (_v, i) =>
    i === 5
      ? io.spawn({ file: '/nonexistent/tool', args: [], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-burst' })
      : io.spawn({ file: process.execPath, args: ['-e', ''], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-burst' }),
  );
  const settled = await Promise.allSettled(orders);
  expect(settled.map((r) => r.status)).toEqual(Array.from({ length: 12 }, (_v, i) => (i === 5 ? 'rejected' : 'fulfilled')));
  const jobs = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  // Started one after another, in call order: each start time (clock ticks since boot) no earlier than the last one's.
  const starts = jobs.map((j) => j.startTime as number);
  expect(starts).toEqual([...starts].sort((a, b) => a - b));
  for (const j of jobs) {
    await j.exit;
    j.discard();
  }
});

it('refuses a spawn the OS refuses, with its errno', async () => {
  const err = await io.spawn({ file: '/nonexistent/tool', args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ProcessSpawnError);
  expect((err as ProcessSpawnError).errno).toBe('ENOENT');
});

it('reports a crash of the thread once: pending spawns refused, the helper gone', async () => {
  const crashDeaths: Error[] = [];
  const crashing = new JobIo(fixture('job-io-crashing.mjs'), { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: false }, (err) => crashDeaths.push(err));
  const job = await crashing.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024, proposalId: 'p-job-io' });
  expect(crashing.stats()).toMatchObject({ spawned: 1, running: 1 });
  expect(job.pid).toBeGreaterThan(0);
  const refused = await crashing.spawn({ file: '/crash', args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ProcessSpawnError);
  await crashing.ended;
  expect(crashDeaths).toHaveLength(1);
  expect(crashDeaths[0]!.message).toContain('job I/O thread crashed on purpose');
  expect(crashing.stats().pid).toBeNull();
  // Refused at once afterwards; the other client is untouched.
  await expect(crashing.spawn({ file: process.execPath, args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' })).rejects.toBeInstanceOf(ProcessSpawnError);
  await crashing.close();
  expect(deaths).toEqual([]);
});

it('takes a thread that answers no ping within its limit for dead (hung): reported once, pending spawns refused, terminated', async () => {
  const hungDeaths: Error[] = [];
  // A limit of 100 ms, not the minute the service gives it (on a loaded machine it may pass before the thread started:
  // the outcome is the same).
  const hanging = new JobIo(fixture('job-io-hanging.mjs'), { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: false }, (err) => hungDeaths.push(err), { answerLimitMs: 100 });
  const refused = await hanging.spawn({ file: '/hang', args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ProcessSpawnError);
  await hanging.ended;
  expect(hungDeaths.map((e) => e.message)).toEqual(['the job I/O thread did not answer within 100 ms']);
  expect(hanging.stats().pid).toBeNull();
  await expect(hanging.spawn({ file: process.execPath, args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' })).rejects.toBeInstanceOf(ProcessSpawnError);
  await hanging.close();
  expect(hungDeaths).toHaveLength(1);
});

it('is not taken for hung while it answers: a job’s lines read across more ticks than its limit', async () => {
  const died: Error[] = [];
  // A 3 s limit (ticks of 1 s) and a job of about 6 s: without the answers, the thread would be taken for hung meanwhile.
  const watched = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: false }, (err) => died.push(err), { answerLimitMs: 3000 });
  const job = await watched.spawn({ file: process.execPath, args: [fixture('slow-lines.mjs'), '--shot', 'slow600'], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' });
  const lines: string[] = [];
  job.read((_s, _n, text) => lines.push(text));
  await job.exit;
  await job.drain(1000);
  expect(lines).toHaveLength(600);
  expect(died).toEqual([]);
  await watched.close();
  expect(died).toEqual([]);
});

it('reports the spawn helper’s death once, and still closes; its young generation as asked, none once ended', async () => {
  const died: Error[] = [];
  const other = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0, encode: false }, (err) => died.push(err), { youngGenerationMb: 12 });
  await waitFor(() => (other.stats().pid !== null ? true : undefined), 'the helper’s pid');
  expect(other.threadStats().youngGenerationMb).toBe(12);
  process.kill(other.stats().pid as number, 'SIGKILL');
  await waitFor(() => (died.length > 0 ? true : undefined), 'the death reported');
  expect(died[0]!.message).toMatch(/the spawn helper process \d+ ended \(SIGKILL\)/);
  expect(other.stats().pid).toBeNull();
  await expect(other.spawn({ file: process.execPath, args: [], env: {}, lineMaxBytes: 1024, proposalId: 'p-job-io' })).rejects.toBeInstanceOf(ProcessSpawnError);
  await other.close();
  expect(died).toHaveLength(1);
  expect(other.threadStats().youngGenerationMb).toBeNull();
});
