/**
 * Stream replays' database reads on the replay thread (src/state/sqlite/replay-thread.ts, replay-task.ts), on a
 * real SQLite file: every block equals the main thread's read of the same page, across segments and limits, with
 * multi-byte text; a segment dropped by retention meanwhile, the thread's death, and a read it leaves unanswered past
 * its limit (the thread replaced) make the read resolve null (the caller reads on the main thread) and are reported;
 * nothing throws.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EventBus } from '../../src/bus/bus.js';
import { NO_FILTER } from '../../src/bus/event.js';
import { WORKER_FILES } from '../../src/config/paths.js';
import { openStateDb, type Db } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';
import { ReplayThread, type SegmentTables } from '../../src/state/sqlite/replay-thread.js';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** A state database with `count` events stored (retention 1,000: segments of 250 rows, the oldest dropped). */
function storeWith(count: number): { file: string; db: Db; log: EventLog; bus: EventBus } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'replay-thread-'));
  const file = path.join(dir, 'console-state.db');
  const db = openStateDb(file);
  const log = new EventLog(db, 1000);
  const bus = new EventBus(log);
  cleanups.push(() => {
    db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  publish(bus, 0, count);
  return { file, db, log, bus };
}

function publish(bus: EventBus, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    // Multi-byte and escaped text, and lengths that vary: the ends are bytes, not characters.
    const summary = i % 3 === 0 ? `é ✓ "quoted" ${i}` : `line ${i} ${'x'.repeat(i % 50)}`;
    bus.publish({ severity: i % 5 === 0 ? 'warning' : 'info', scope: 'test/replay', summary, detail: i % 7 === 0 ? 'tab\there' : null });
  }
  bus.flush();
}

function thread(file: string, tables: SegmentTables, workerFile = WORKER_FILES.replay, nice = 0): { replay: ReplayThread; errors: Error[] } {
  const errors: Error[] = [];
  const replay = new ReplayThread(workerFile, file, tables, (err) => errors.push(err), nice);
  cleanups.push(() => replay.close());
  return { replay, errors };
}

describe('replay thread', () => {
  it('reads every page exactly as the main thread does: resume points, limits, bounds, across segments', async () => {
    const { file, log } = storeWith(2600);
    const { replay, errors } = thread(file, (s, u) => log.segmentTables(s, u));
    const oldest = (log.after(0, 1, NO_FILTER)[0] as { id: number }).id;
    expect(oldest).toBeGreaterThan(1); // retention dropped the first segments
    for (const since of [0, oldest - 1, oldest, oldest + 249, 1999, 2250, 2599, 2600]) {
      for (const limit of [1, 7, 500, 2000]) {
        for (const upTo of [oldest + 100, 2000, 2500, 2600]) {
          if (upTo <= since) continue;
          const block = await replay.read(since, limit, upTo);
          const want = log.framesAfter(since, limit, NO_FILTER, upTo);
          const where = JSON.stringify({ since, limit, upTo });
          expect(block, where).not.toBeNull();
          expect(block?.buf.toString('utf8'), where).toBe(want.join(''));
          expect(Array.from(block?.ids ?? []), where).toEqual(want.map((f) => Number(f.slice(4, f.indexOf('\n')))));
          // Each end is where that event's frame ends, in bytes.
          const ends = want.map((_, i) => Buffer.byteLength(want.slice(0, i + 1).join('')));
          expect(Array.from(block?.ends ?? []), where).toEqual(ends);
        }
      }
    }
    expect(errors).toEqual([]);
  });

  it('resolves null and reports it when a segment was dropped by retention meanwhile, then reads the next page', async () => {
    const { file, log, bus } = storeWith(1200);
    let stale: readonly string[] | null = null;
    const { replay, errors } = thread(file, (s, u) => stale ?? log.segmentTables(s, u));
    const oldest = (log.after(0, 1, NO_FILTER)[0] as { id: number }).id;
    // The tables named when the read was asked for; retention drops the oldest before the thread reads it.
    stale = log.segmentTables(oldest - 1, oldest + 10);
    publish(bus, 1200, 1000);
    expect(log.segmentTables(oldest - 1, oldest + 10)).not.toEqual(stale);
    expect(await replay.read(oldest - 1, 10, oldest + 10)).toBeNull();
    expect(errors.map((e) => e.message).join('\n')).toMatch(/no such table/);
    stale = null;
    const now = (log.after(0, 1, NO_FILTER)[0] as { id: number }).id;
    const block = await replay.read(now - 1, 500, 2200);
    expect(block?.buf.toString('utf8')).toBe(log.framesAfter(now - 1, 500, NO_FILTER, 2200).join(''));
  });

  it('resolves null and reports it when its thread dies inside a read; the service goes on', async () => {
    const { file, log } = storeWith(300);
    const crashing = path.join(import.meta.dirname, '..', 'fixtures', 'replay-crashing.mjs');
    const { replay, errors } = thread(file, (s, u) => log.segmentTables(s, u), crashing);
    expect(await replay.read(0, 500, 300)).toBeNull();
    expect(await replay.read(0, 500, 300)).toBeNull();
    expect(errors.length).toBeGreaterThanOrEqual(2);
    expect(errors[0]?.message).toMatch(/exit|3/i);
  });

  it('resolves null and reports it when a read is not answered within its limit; the thread is replaced and the next read made there', async () => {
    const { file, log } = storeWith(300);
    const hanging = path.join(import.meta.dirname, '..', 'fixtures', 'replay-hanging.mjs');
    const errors: Error[] = [];
    const replay = new ReplayThread(
      hanging,
      file,
      (s, u) => log.segmentTables(s, u),
      (err) => errors.push(err),
      0,
      1000,
    );
    cleanups.push(() => replay.close());
    // The fixture never answers a read of 7: a thread stuck for good.
    const stuck = replay.read(0, 7, 300);
    const queued = replay.read(0, 500, 300);
    expect(await stuck).toBeNull();
    expect(errors.map((e) => e.message)).toEqual(['the replay thread did not answer within 1000 ms']);
    // The read queued behind it is made on the thread that replaced it, whole.
    expect((await queued)?.ids.length).toBe(300);
    expect((await replay.read(0, 10, 300))?.ids.length).toBe(10);
    expect(errors).toHaveLength(1);
  });

  it('runs at its own nice value, below the thread that started it, and says which thread it is', async () => {
    const { file, log } = storeWith(10);
    const { replay, errors } = thread(file, (s, u) => log.segmentTables(s, u), WORKER_FILES.replay, 5);
    expect(replay.stats()).toEqual({ tid: null, nice: null });
    await replay.open();
    const { tid, nice } = replay.stats();
    expect(nice).toBe(5);
    // Linux keeps a nice value per thread: the thread's is 5, this one's is unchanged.
    const niceOf = (task: number | string) => Number(fs.readFileSync(`/proc/self/task/${task}/stat`, 'utf8').split(') ')[1]?.split(' ')[16]);
    expect(niceOf(tid as number)).toBe(5);
    expect(niceOf(fs.readlinkSync('/proc/thread-self').split('/').pop() as string)).toBe(os.getPriority(0));
    expect(os.getPriority(0)).not.toBe(5);
    expect((await replay.read(0, 500, 10))?.ids.length).toBe(10);
    expect(errors).toEqual([]);
  });

  it('reports, with the database’s reason, a state database it cannot open; reads then resolve null', async () => {
    const missing = path.join(os.tmpdir(), 'replay-thread-missing', 'console-state.db');
    const { replay, errors } = thread(missing, () => []);
    await replay.open();
    expect(replay.stats()).toEqual({ tid: null, nice: null });
    expect(errors[0]?.message).toMatch(/replay thread: opening .*console-state\.db: .+/);
    expect(await replay.read(0, 500, 10)).toBeNull();
    expect(errors[1]?.message).toMatch(/replay read of .*console-state\.db: .+/);
  });

  it('refuses to start when its worker is not built', () => {
    expect(
      () =>
        new ReplayThread(
          '/nonexistent/replay-task.js',
          '/tmp/x.db',
          () => [],
          () => {},
        ),
    ).toThrow(/replay worker not found/);
  });
});
