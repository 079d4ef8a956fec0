/**
 * Readiness: `GET /api/ready` answers 200 only when the store folder is
 * readable, the dispatch tool file exists, the state database takes writes and the worker pool
 * is up, else 503 with every check; it is open without the token. Start-up refuses a
 * CONSOLE_DATA_DIR that does not exist (naming the variable) and warns when the dispatch tool
 * is missing. (The state database's full disk: test/state/state-db-faults.test.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { startServiceProcess } from '../helpers/process.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { failedStart } from '../helpers/service-process.js';
import { checkSqlite } from '../../src/main/sqlite-backend.js';
import { EventBus } from '../../src/bus/bus.js';
import { openStateDb } from '../../src/state/sqlite/db.js';
import { EventLog } from '../../src/state/sqlite/event-log.js';

const TOKEN = 'ready-test-token';
const NAMES = ['store', 'dispatchTool', 'stateDatabase', 'workers'];

interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** `GET /api/ready`, with the token unless `open` (then each check's name and result only). */
async function ready(url: string, open = false): Promise<{ status: number; body: { ready: boolean; checks: Check[]; detail?: string; code?: string } }> {
  const res = await fetch(`${url}/api/ready`, open ? {} : { headers: { authorization: `Bearer ${TOKEN}` } });
  return { status: res.status, body: (await res.json()) as never };
}

const failing = (checks: Check[]) => checks.filter((c) => !c.ok).map((c) => c.name);

describe('GET /api/ready on a running service', () => {
  let t: TestService;
  beforeAll(async () => {
    t = await startTestService({ env: { CONSOLE_API_TOKEN: TOKEN } });
    cleanups.push(() => t.close());
  });

  it('answers 200 with every check ok, without the token (names and results only) and with it (details too)', async () => {
    const open = await ready(t.url, true);
    expect(open.status).toBe(200);
    expect(open.body).toEqual({ ready: true, checks: NAMES.map((name) => ({ name, ok: true })) });
    const r = await ready(t.url);
    expect(r.status).toBe(200);
    expect(r.body.ready).toBe(true);
    expect(r.body.checks.map((c) => c.name)).toEqual(NAMES);
    expect(failing(r.body.checks)).toEqual([]);
    expect(r.body.checks.find((c) => c.name === 'workers')?.detail).toBe('1 of 1 worker threads up');
  });

  it('answers 503 naming the store while its folder is gone, and 200 once it is back', async () => {
    const away = `${t.dataDir}.away`;
    fs.renameSync(t.dataDir, away);
    try {
      const r = await ready(t.url);
      expect(r.status).toBe(503);
      expect(r.body).toMatchObject({ code: 'not_ready', ready: false });
      expect(failing(r.body.checks)).toEqual(['store']);
      expect(r.body.checks[0]?.detail).toBe(`CONSOLE_DATA_DIR ${t.dataDir} does not exist`);
      expect(r.body.detail).toContain(`store (CONSOLE_DATA_DIR ${t.dataDir} does not exist)`);
      // Without the token the failing check is named, and nothing of the installation.
      const open = await ready(t.url, true);
      expect(open.status).toBe(503);
      expect(open.body).toEqual({ code: 'not_ready', ready: false, detail: 'not ready: store', checks: NAMES.map((name) => ({ name, ok: name !== 'store' })) });
    } finally {
      fs.renameSync(away, t.dataDir);
    }
    expect((await ready(t.url)).status).toBe(200);
  });

  it('answers 503 naming the state database while another process holds its write lock', async () => {
    const other = new Database(path.join(t.stateDir, 'console-state.db'));
    other.pragma('busy_timeout = 0');
    other.exec('BEGIN IMMEDIATE');
    let r: Awaited<ReturnType<typeof ready>>;
    try {
      r = await ready(t.url);
    } finally {
      other.exec('ROLLBACK');
      other.close();
    }
    expect(r.status).toBe(503);
    expect(failing(r.body.checks)).toEqual(['stateDatabase']);
    expect(r.body.checks[2]?.detail).toMatch(/cannot be written now: database is locked/);
    expect((await ready(t.url)).status).toBe(200);
  });
});

describe('start-up', () => {
  it('refuses a CONSOLE_DATA_DIR that does not exist: exit 1, the message names the variable, nothing served', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ready-nostore-'));
    cleanups.push(() => fs.rmSync(tmp, { recursive: true, force: true }));
    const missing = path.join(tmp, 'does-not-exist');
    const r = await failedStart({ env: { CONSOLE_DATA_DIR: missing, CONSOLE_STATE_DIR: path.join(tmp, 'state') } });
    expect(r.code).toBe(1);
    expect(r.listened).toBe(false);
    expect(r.stderr).toContain(`CONSOLE_DATA_DIR: ${missing} does not exist`);
  });

  it('warns when the dispatch tool is missing, and /api/ready says so until the file is there', async () => {
    const store = makeTempStore('empty');
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    const tool = path.join(store.tmp, 'tools', 'dispatch.mjs');
    const svc = await startServiceProcess(store, { LOG_LEVEL: 'warn', DISPATCH_CLI: tool }, (fn) => cleanups.push(fn));
    const warning = await waitFor(
      () =>
        svc
          .stdout()
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((l) => l.dispatchCli === tool),
      'the warning about the dispatch tool',
    );
    expect(warning).toMatchObject({ level: 40, msg: expect.stringContaining('(DISPATCH_CLI) does not exist') });

    const r = await ready(svc.url);
    expect(r.status).toBe(503);
    expect(failing(r.body.checks)).toEqual(['dispatchTool']);
    expect(r.body.checks[1]?.detail).toBe(`DISPATCH_CLI ${tool} does not exist`);

    fs.mkdirSync(path.dirname(tool));
    fs.writeFileSync(tool, '');
    expect((await ready(svc.url)).status).toBe(200);
  });
});

describe('the state database’s check (checkSqlite)', () => {
  it('leaves a console write’s transaction under way on the connection alone: ok, and the write commits whole', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ready-tx-'));
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    const db = openStateDb(path.join(dir, 'console-state.db'));
    cleanups.push(() => db.close());
    const log = new EventLog(db, 1000);
    const bus = new EventBus(log);
    // A transaction open across a poll (as one that awaits between its statements would be).
    db.exec('BEGIN IMMEDIATE');
    db.prepare(`INSERT INTO meta (key, value) VALUES ('ready-tx', 'one')`).run();
    const check = checkSqlite(db, bus, log);
    expect(check).toMatchObject({ name: 'stateDatabase', ok: true });
    expect(check.detail).toMatch(/a console write is under way/);
    expect(db.inTransaction).toBe(true);
    db.prepare(`INSERT INTO meta (key, value) VALUES ('ready-tx-2', 'two')`).run();
    db.exec('COMMIT');
    expect(db.prepare(`SELECT count(*) AS n FROM meta WHERE key LIKE 'ready-tx%'`).get()).toEqual({ n: 2 });
    // Outside a transaction the lock is taken and given back: ok, and nothing left open.
    expect(checkSqlite(db, bus, log)).toMatchObject({ ok: true, detail: expect.stringMatching(/takes writes$/) });
    expect(db.inTransaction).toBe(false);
  });
});
