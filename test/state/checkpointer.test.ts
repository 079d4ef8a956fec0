import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { BACKSTOP_CHECKPOINT_PAGES } from '../../src/state/db.js';
import { waitFor } from '../helpers/events.js';
import { startTestService, type TestService } from '../helpers/service.js';
import { WORKER_FILES } from '../../src/main/paths.js';

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
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(t.config.stateDbPath, { readonly: true });
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect((db.prepare(`SELECT count(*) AS c FROM events WHERE scope = 'test/ckpt'`).get() as { c: number }).c).toBe(5000);
    db.close();
  });
});

describe('Checkpointer', () => {
  it('reports a database it cannot open and still stops', async () => {
    const { Checkpointer } = await import('../../src/state/checkpointer.js');
    const c = new Checkpointer('/nonexistent-dir/state.db', WORKER_FILES.checkpoint, 50);
    await waitFor(() => (c.failures > 0 ? true : undefined), 'the failure to be reported');
    await c.stop();
    await c.stop(); // idempotent
  });
});
