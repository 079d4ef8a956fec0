/**
 * The job I/O thread through its client (src/supervisor/job-io.ts): lines in each stream's order,
 * held while a bus gate holds and none handed on meanwhile, the thread's own figures, and its crash:
 * reported once, pending spawns refused.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WORKER_FILES } from '../../src/config/paths.js';
import { ProcessSpawnError } from '../../src/process/index.js';
import { JobIo } from '../../src/supervisor/index.js';
import type { LineHold } from '../../src/supervisor/output-gate.js';
import { waitFor } from '../helpers/events.js';
import { fixture } from '../helpers/service.js';
import { requireBuild } from '../fixtures/rel-c-harness.js';
import { killMarked } from '../process/helpers.js';

const MARK = 'JOB_IO_TEST=1';
let io: JobIo;
const deaths: Error[] = [];

beforeAll(() => {
  requireBuild();
  io = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 3 }, (err) => deaths.push(err));
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
  io.spawn({ file: process.execPath, args: [fixture('print-lines.mjs'), '--out', String(out), '--err', String(err)], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024 });

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
  expect(t.tid).not.toBe(process.pid);
  expect(io.stats()).toMatchObject({ spawned: 1, refused: 0, running: 0 });
});

it('hands on the nice value the spawn helper set on the job, and sets none when none is asked for', async () => {
  const autogroups = fs.readFileSync('/proc/sys/kernel/sched_autogroup_enabled', 'utf8').trim() === '1';
  const lowered = await io.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, nice: 11, lineMaxBytes: 1024 });
  expect(lowered.lowered).toEqual({ process: true, group: autogroups ? 'set' : 'none' });
  const stat = fs.readFileSync(`/proc/${lowered.pid}/stat`, 'utf8');
  expect(Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16])).toBe(11);
  const plain = await io.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024 });
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

it('refuses a spawn the OS refuses, with its errno', async () => {
  const err = await io.spawn({ file: '/nonexistent/tool', args: [], env: {}, lineMaxBytes: 1024 }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(ProcessSpawnError);
  expect((err as ProcessSpawnError).errno).toBe('ENOENT');
});

it('reports a crash of the thread once: pending spawns refused, the helper gone', async () => {
  const crashDeaths: Error[] = [];
  const crashing = new JobIo(fixture('job-io-crashing.mjs'), { helperFile: WORKER_FILES.spawnHelper, nice: 0 }, (err) => crashDeaths.push(err));
  const job = await crashing.spawn({ file: process.execPath, args: [fixture('forever.mjs')], env: { JOB_IO_TEST: '1' }, lineMaxBytes: 1024 });
  expect(crashing.stats()).toMatchObject({ spawned: 1, running: 1 });
  expect(job.pid).toBeGreaterThan(0);
  const refused = await crashing.spawn({ file: '/crash', args: [], env: {}, lineMaxBytes: 1024 }).catch((e: unknown) => e);
  expect(refused).toBeInstanceOf(ProcessSpawnError);
  await crashing.ended;
  expect(crashDeaths).toHaveLength(1);
  expect(crashDeaths[0]!.message).toContain('job I/O thread crashed on purpose');
  expect(crashing.stats().pid).toBeNull();
  // Refused at once afterwards; the other client is untouched.
  await expect(crashing.spawn({ file: process.execPath, args: [], env: {}, lineMaxBytes: 1024 })).rejects.toBeInstanceOf(ProcessSpawnError);
  await crashing.close();
  expect(deaths).toEqual([]);
});

it('reports the spawn helper’s death once, and still closes', async () => {
  const died: Error[] = [];
  const other = new JobIo(WORKER_FILES.jobIo, { helperFile: WORKER_FILES.spawnHelper, nice: 0 }, (err) => died.push(err));
  await waitFor(() => (other.stats().pid !== null ? true : undefined), 'the helper’s pid');
  process.kill(other.stats().pid as number, 'SIGKILL');
  await waitFor(() => (died.length > 0 ? true : undefined), 'the death reported');
  expect(died[0]!.message).toMatch(/the spawn helper process \d+ ended \(SIGKILL\)/);
  expect(other.stats().pid).toBeNull();
  await expect(other.spawn({ file: process.execPath, args: [], env: {}, lineMaxBytes: 1024 })).rejects.toBeInstanceOf(ProcessSpawnError);
  await other.close();
  expect(died).toHaveLength(1);
});
