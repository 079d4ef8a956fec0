/**
 * Errors and logs, through the compiled service as its own process:
 * - an error the service did not expect is a 500 `internal` with a generic detail and the
 *   request's id, logged once at error with its stack; a module that cannot be loaded while a
 *   request is handled is such an error (the case seen: `npm ci` in another shell
 *   deleted node_modules under the running service, and a generation request answered 400
 *   with `Cannot find module '../encodings'` and absolute paths, logged at info);
 * - every 5xx log line says why; every answer carries `X-Request-Id`;
 * - one start-up line with the version, address, store, state database and the settings that
 *   differ from their defaults; `LOG_FORMAT=pretty` writes lines for people.
 * The first service runs from a copy of `dist/` with its own `node_modules` (hard links, so
 * the copy is cheap), from which the test removes what the body parser loads lazily.
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { freePort, startServiceProcess, type ServiceProcess } from '../helpers/process.js';
import { makeTempStore, REPO_ROOT } from '../helpers/service.js';

const TOKEN = 'errors-test-token';
const AUTH = { authorization: `Bearer ${TOKEN}` };
const JSON_BODY = { ...AUTH, 'content-type': 'application/json' };
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const VERSION = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

type Line = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- log lines are plain JSON

const cleanups: (() => unknown)[] = [];
afterAll(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/**
 * A copy of the built service in a temp folder: `dist/`, `package.json`, and `node_modules`
 * as hard links to this repository's files (a full copy where the temp folder is on another
 * file system). Removing a file of the copy leaves the repository's untouched.
 */
function copyService(root: string): string {
  const app = path.join(root, 'app');
  fs.mkdirSync(app);
  fs.cpSync(path.join(REPO_ROOT, 'dist'), path.join(app, 'dist'), { recursive: true });
  fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(app, 'package.json'));
  // The ops page's static files are served from src/ops-page as they are (no build step).
  fs.cpSync(path.join(REPO_ROOT, 'src', 'ops-page'), path.join(app, 'src', 'ops-page'), { recursive: true });
  const linked = spawnSync('cp', ['-al', path.join(REPO_ROOT, 'node_modules'), path.join(app, 'node_modules')]);
  if (linked.status !== 0) fs.cpSync(path.join(REPO_ROOT, 'node_modules'), path.join(app, 'node_modules'), { recursive: true });
  return app;
}

/** Starts `<app>/dist/main/index.js` as `npm start` does, and waits until it answers. */
async function startCopy(app: string, env: Record<string, string>): Promise<{ url: string; stdout: () => string; stop: () => Promise<unknown> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [path.join(app, 'dist', 'main', 'index.js')], {
    env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), CONSOLE_WORKER_THREADS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (err += d));
  const exited = once(child, 'exit');
  let gone = false;
  void exited.then(() => (gone = true));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (gone) throw new Error(`the copied service exited at start-up: ${err}`);
    try {
      return (await fetch(`${url}/api/health`)).ok ? true : undefined;
    } catch {
      return undefined;
    }
  }, 'the copied service to answer');
  const stop = async () => {
    if (!gone) child.kill('SIGTERM');
    await exited;
  };
  cleanups.push(stop);
  return { url, stdout: () => out, stop };
}

const lines = (text: string): Line[] =>
  text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Line);

describe('the service as a process, from a copy whose node_modules loses a module', () => {
  let app: string;
  let svc: Awaited<ReturnType<typeof startCopy>>;
  let store: ReturnType<typeof makeTempStore>;

  beforeAll(async () => {
    store = makeTempStore('sample');
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    app = copyService(store.tmp);
    svc = await startCopy(app, {
      CONSOLE_DATA_DIR: store.dataDir,
      CONSOLE_STATE_DIR: store.stateDir,
      LOG_LEVEL: 'info',
      CONSOLE_API_TOKEN: TOKEN,
      CONSOLE_MAX_RUNNING_JOBS: '7',
      CONSOLE_KILL_GRACE_MS: '5000', // the default, given: not listed
      LOG_FORMAT: 'json', // the same
    });
  });

  it('answers a module that cannot be loaded with a 500 internal naming no path, with the request id, logged once with its stack', async () => {
    // What `npm ci` in another shell did: the body parser's lazily loaded encodings are gone.
    const encodings = path.join(app, 'node_modules', 'iconv-lite', 'encodings');
    const kept = path.join(store.tmp, 'encodings-kept');
    fs.renameSync(encodings, kept);
    const res = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ project: 'harbor-lights', dryRun: true }) });
    const text = await res.text();
    const id = res.headers.get('x-request-id');
    expect(res.status).toBe(500);
    expect(id).toMatch(UUID);
    expect(JSON.parse(text)).toEqual({ detail: 'internal server error', code: 'internal', requestId: id });
    expect(text).not.toMatch(/Cannot find module|node_modules|\//);

    const forId = await waitFor(() => {
      const mine = lines(svc.stdout()).filter((l) => l.reqId === id);
      return mine.length >= 2 ? mine : undefined;
    }, 'the log lines of the request');
    // Once with the stack (the unexpected error), and its request line says why: both at error.
    const unhandled = forId.filter((l) => l.msg === 'unhandled error');
    expect(unhandled).toHaveLength(1);
    expect(unhandled[0]).toMatchObject({
      level: 50,
      method: 'POST',
      url: '/api/proposals/generate',
      err: { message: expect.stringContaining('Cannot find module'), stack: expect.stringContaining('Cannot find module') },
    });
    const requestLine = forId.find((l) => l.route === '/api/proposals/generate');
    expect(requestLine).toMatchObject({ level: 50, status: 500, code: 'internal', reason: expect.stringContaining('Cannot find module') });
    expect(lines(svc.stdout()).filter((l) => l.status === 500 && l.level !== 50)).toEqual([]);

    // The module back, the same request is served: nothing of the fault was kept.
    fs.renameSync(kept, encodings);
    const again = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: JSON_BODY, body: JSON.stringify({ project: 'harbor-lights', dryRun: true }) });
    expect(again.status).toBe(202);
  });

  it('keeps a fault of the request itself a 4xx: a body that does not decompress (gzip, brotli) is a 400', async () => {
    const res = await fetch(`${svc.url}/api/clicks`, {
      method: 'POST',
      headers: { ...JSON_BODY, 'content-encoding': 'gzip' },
      body: JSON.stringify({ projectId: 'harbor-lights', target: 'x' }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'bad_request' });
    const brotli = await fetch(`${svc.url}/api/clicks`, { method: 'POST', headers: { ...JSON_BODY, 'content-encoding': 'br' }, body: '{}' });
    expect(brotli.status).toBe(400);
    expect(await brotli.json()).toMatchObject({ code: 'bad_request' });
    const deflated = await fetch(`${svc.url}/api/clicks`, {
      method: 'POST',
      headers: { ...JSON_BODY, 'content-encoding': 'deflate' },
      body: zlib.deflateSync(JSON.stringify({ projectId: 'harbor-lights', target: 'x' })),
    });
    expect(deflated.status).toBe(201);
  });

  it('sends X-Request-Id on every answer: a plain id the client gave is kept, anything else replaced', async () => {
    for (const p of ['/api/health', '/api/projects', '/api/nope', '/api/jobs/gen_000000000000']) {
      const res = await fetch(svc.url + p, { headers: AUTH });
      await res.body?.cancel();
      expect(res.headers.get('x-request-id'), p).toMatch(UUID);
    }
    const kept = await fetch(`${svc.url}/api/health`, { headers: { 'x-request-id': 'lb-7f3a.42' } });
    expect(kept.headers.get('x-request-id')).toBe('lb-7f3a.42');
    const replaced = await fetch(`${svc.url}/api/health`, { headers: { 'x-request-id': 'a b<script>' } });
    expect(replaced.headers.get('x-request-id')).toMatch(UUID);
    const line = await waitFor(() => lines(svc.stdout()).find((l) => l.reqId === 'lb-7f3a.42'), 'the line of the kept id');
    expect(line).toMatchObject({ route: '/api/health', status: 200 });
  });

  it('logs one start-up line: version, address, store, state database, and the settings that differ from their defaults', () => {
    const started = lines(svc.stdout()).filter((l) => l.msg === 'console-backend listening');
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      level: 30,
      version: VERSION,
      url: svc.url,
      dataDir: store.dataDir,
      stateDb: path.join(store.stateDir, 'console-state.db'),
      settings: { CONSOLE_MAX_RUNNING_JOBS: '7', CONSOLE_API_TOKEN: '(set)', CONSOLE_DATA_DIR: store.dataDir },
    });
    for (const name of ['CONSOLE_KILL_GRACE_MS', 'LOG_LEVEL', 'LOG_FORMAT']) expect(started[0]?.settings).not.toHaveProperty(name);
    expect(svc.stdout()).not.toContain(TOKEN);
  });
});

describe('LOG_FORMAT=pretty', () => {
  let svc: ServiceProcess;
  beforeAll(async () => {
    const store = makeTempStore('empty');
    cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
    svc = await startServiceProcess(store, { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', DISPATCH_CLI: '/nonexistent/pretty-tool.js' }, (fn) => cleanups.push(fn));
  });

  it('writes lines for people: local time, level name, message and fields; the 5xx line with its reason', async () => {
    const res = await fetch(`${svc.url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ project: 'p' }) });
    expect(res.status).toBe(500);
    const out = await waitFor(() => (/POST \/api\/proposals\/generate 500/.test(svc.stdout()) ? svc.stdout() : undefined), 'the request line');
    expect(out).toMatch(/^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] INFO: console-backend listening$/m);
    expect(out).toMatch(/^\[[^\]]+\] ERROR: POST \/api\/proposals\/generate 500$/m);
    expect(out).toMatch(/^ {4}reason: "dispatch tool not found: \/nonexistent\/pretty-tool\.js"$/m);
    for (const l of out.split('\n').filter((x) => x.startsWith('{'))) expect(() => JSON.parse(l), l).toThrow();
  });
});
