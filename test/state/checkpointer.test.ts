import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKSTOP_CHECKPOINT_PAGES } from '../../src/state/sqlite/db.js';
import { waitFor } from '../helpers/events.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { WORKER_FILES } from '../../src/config/paths.js';

let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('WAL checkpoints', () => {
  it('copy committed pages into the database file while the service runs, below the backstop threshold', async () => {
    t = await startTestService({ store: 'empty' });
    const file = t.config.stateDbPath;
    const before = fs.statSync(file).size;
    // About 4 MB of events: far below the main connection's own threshold, so only the
    // checkpointer's thread can move these pages into the database file.
    const burstBytes = 4 * 1024 * 1024;
    expect(burstBytes).toBeLessThan((BACKSTOP_CHECKPOINT_PAGES * 4096) / 4);
    const summary = 'x'.repeat(1000);
    for (let i = 0; i < burstBytes / 1000; i++) t.service.deps.bus.publish({ severity: 'info', scope: 'test/ckpt', summary });
    t.service.deps.bus.flush();
    const grown = await waitFor(() => (fs.statSync(file).size >= before + burstBytes / 2 ? fs.statSync(file).size : undefined), 'the database file to grow');
    expect(grown).toBeGreaterThan(before);
  });

  it('leaves a consistent database after shutdown', async () => {
    t = await startTestService({ store: 'empty' });
    for (let i = 0; i < 5000; i++) t.service.deps.bus.publish({ severity: 'info', scope: 'test/ckpt', summary: `e${i}` });
    await t.stop();
    const Database = (await import('../../src/state/sqlite/binding.js')).default;
    const db = new Database(t.config.stateDbPath, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect((db.prepare(`SELECT count(*) AS c FROM events WHERE scope = 'test/ckpt'`).get() as { c: number }).c).toBe(5000);
    db.close();
  });
});

describe('Checkpointer', () => {
  it('runs on the housekeeping thread, reports a database it cannot open, and still stops', async () => {
    const { Checkpointer } = await import('../../src/state/sqlite/checkpointer.js');
    const { HousekeepingThread } = await import('../../src/process/index.js');
    const procs = new HousekeepingThread(WORKER_FILES.proc);
    try {
      const c = new Checkpointer('/nonexistent-dir/state.db', (task) => procs.runTask(WORKER_FILES.checkpoint, task), 50);
      await waitFor(() => (c.failures > 0 ? true : undefined), 'the failure to be reported');
      await c.stop();
      await c.stop(); // idempotent
      // The thread's /proc tasks still run.
      expect(await procs.bootTimeMs()).toBeGreaterThan(0);
    } finally {
      await procs.close();
    }
  });

  it('checkpoints a database on the thread, closes its connection at the stop, and counts a thread that is gone as a failure', async () => {
    const { Checkpointer } = await import('../../src/state/sqlite/checkpointer.js');
    const { HousekeepingThread } = await import('../../src/process/index.js');
    const Database = (await import('../../src/state/sqlite/binding.js')).default;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ckpt-'));
    const file = path.join(dir, 'state.db');
    const main = new Database(file);
    main.pragma('journal_mode = WAL');
    main.pragma('wal_autocheckpoint = 0');
    main.exec('CREATE TABLE t (x TEXT)');
    const insert = main.prepare('INSERT INTO t VALUES (?)');
    for (let i = 0; i < 2000; i++) insert.run('y'.repeat(500));
    const walBytes = () => fs.statSync(`${file}-wal`).size;
    const dbBytes = () => fs.statSync(file).size;
    const before = dbBytes();
    const procs = new HousekeepingThread(WORKER_FILES.proc);
    let seen = 0;
    const c = new Checkpointer(
      file,
      (task) =>
        procs.runTask(WORKER_FILES.checkpoint, task).then((r) => {
          seen++;
          return r as never;
        }),
      20,
    );
    try {
      // The WAL's pages are copied into the database file by the thread's connection.
      await waitFor(() => (dbBytes() > before + 500_000 ? true : undefined), 'the database file to grow');
      expect(walBytes()).toBeGreaterThan(0);
      await c.stop();
      expect(c.failures).toBe(0);
      const after = seen;
      await new Promise((r) => setTimeout(r, 100));
      expect(seen).toBe(after); // no tick after the stop
    } finally {
      await procs.close();
      main.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    // With the thread closed, a checkpoint fails (counted) and the stop still resolves.
    const gone = new Checkpointer('/nonexistent-dir/state.db', (task) => procs.runTask(WORKER_FILES.checkpoint, task), 10);
    await waitFor(() => (gone.failures > 0 ? true : undefined), 'the failure of a closed thread');
    await gone.stop();
  });
});
