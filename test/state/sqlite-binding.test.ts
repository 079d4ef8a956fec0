/**
 * The SQLite binding of every runtime the service supports (src/state/sqlite/binding.ts):
 * better-sqlite3 12 on Node.js 20, 13 (Node-API) on 22 and newer. better-sqlite3 12 aborted the
 * service on Node.js 24 seconds into serving (`Assertion failed: (env) != nullptr` in
 * `node::RemoveEnvironmentCleanupHook`, a statement finalised by the garbage collector outside
 * any JavaScript context). These tests run on whatever runtime runs the suite (CI runs it on
 * Node.js 20 and 24): the process must survive statements dropped and collected, and worker
 * threads that use the state database coming and going, under load.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SQLITE_BINDING, SQLITE_PACKAGE } from '../../src/state/sqlite/binding.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { startServiceProcess, type ServiceProcess } from '../helpers/service-process.js';

const NODE_MAJOR = Number(process.versions.node.split('.')[0]);

describe('the SQLite binding of this runtime', () => {
  it('is better-sqlite3 12 on Node.js 20 and better-sqlite3 13 on 22 and newer', () => {
    expect(SQLITE_PACKAGE).toBe(NODE_MAJOR >= 22 ? 'better-sqlite3-13' : 'better-sqlite3');
    expect(SQLITE_BINDING).toMatch(NODE_MAJOR >= 22 ? /^better-sqlite3 13\.\d+\.\d+$/ : /^better-sqlite3 12\.\d+\.\d+$/);
  });

  it('survives statements collected between callbacks and worker threads that open the database and exit', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sqlite-churn-'));
    try {
      const child = spawn(process.execPath, [fixture('sqlite-churn.mjs'), path.join(dir, 'churn.db'), '40'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
      const [code, signal] = (await once(child, 'exit')) as [number | null, NodeJS.Signals | null];
      expect({ code, signal, aborted: /Assertion failed/.test(out) }, out).toEqual({ code: 0, signal: null, aborted: false });
      expect(out).toContain('survived 40 rounds, 80 worker threads');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the service on this runtime, under load', () => {
  let svc: ServiceProcess | undefined;
  let tmp: string | undefined;
  afterEach(async () => {
    await svc?.stop();
    svc = undefined;
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('keeps serving through jobs, console writes and filtered event reads (statements made and dropped)', async () => {
    const store = makeTempStore();
    tmp = store.tmp;
    svc = await startServiceProcess({
      env: {
        CONSOLE_DATA_DIR: store.dataDir,
        CONSOLE_STATE_DIR: store.stateDir,
        DISPATCH_CLI: fixture('print-lines.mjs'),
        CONSOLE_WORKER_THREADS: '2',
        CONSOLE_MAX_RUNNING_JOBS: '512',
      },
    });
    const failures: string[] = [];
    const post = (p: string, body: unknown) =>
      fetch(`${svc!.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => {
        const text = await r.text();
        if (r.status >= 500) failures.push(`POST ${p} ${r.status} ${text}`);
        return r.status;
      });
    const get = (p: string) =>
      fetch(`${svc!.url}${p}`).then(async (r) => {
        const text = await r.text();
        if (r.status >= 500) failures.push(`GET ${p} ${r.status} ${text}`);
        return r.status;
      });
    const statuses: number[] = [];
    for (let round = 0; round < 30; round++) {
      const batch: Promise<number>[] = [];
      for (let i = 0; i < 4; i++) batch.push(post('/api/proposals/generate', { project: 'harbor-lights', dryRun: true }));
      for (let i = 0; i < 4; i++) batch.push(post('/api/proposals', { title: `p${round}.${i}` }));
      batch.push(post('/api/takes/tk_0001/action', { projectId: 'harbor-lights', action: 'circled_toggled' }));
      batch.push(post('/api/clicks', { projectId: 'harbor-lights', target: `t${round}` }));
      // Each distinct filter is a statement of its own.
      batch.push(get(`/api/events?scopePrefix=engine/r${round}&limit=500`));
      batch.push(get(`/api/events?severities=info&severities=warning&scopePrefix=chat/${round}`));
      batch.push(get('/api/projects'), get('/api/projects/harbor-lights/episodes'), get('/api/system-status'), get('/api/jobs'));
      statuses.push(...(await Promise.all(batch)));
    }
    expect(failures).toEqual([]);
    expect(statuses.length).toBe(30 * 16);
    expect(svc.child.exitCode).toBeNull();
    expect(svc.child.signalCode).toBeNull();
    expect((await fetch(`${svc.url}/api/health`)).status).toBe(200);
    expect(svc.stderr()).not.toMatch(/Assertion failed/);
    const [code, signal] = await svc.stop();
    svc = undefined;
    expect({ code, signal }).toEqual({ code: 0, signal: null });
  });
});
