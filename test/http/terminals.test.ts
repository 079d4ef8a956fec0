/**
 * Terminals through the real server (api-decisions.md, "Service routes with partial shape":
 * Terminal), with test/fixtures/ttyd-standin.mjs as TTYD_BIN: a real child that accepts ttyd's
 * command line, serves HTTP on the port it is given and runs its command in a session of its
 * own (as ttyd does in a pty), so stopping it must kill a tree, not one process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readProc } from '../../src/process/proc-scan.js';
import { allEvents, waitFor } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';

const A = 'harbor-lights';
const B = 'night-market';
const STANDIN = fixture('ttyd-standin.mjs');
/** What the terminal runs; the last argument has spaces and shell syntax: it must arrive as one argument. */
const COMMAND = [process.execPath, fixture('forever.mjs'), 'two words; echo $HOME'];

interface Terminal {
  projectId: string;
  state: 'running' | 'exited' | 'stopped';
  pid: number;
  port: number;
  url: string;
  cwd: string;
  command: string[];
  argv: string[];
  startedAt: string;
  endedAt: string | null;
  rc: number | null;
  signal: string | null;
}
interface StandinInfo {
  pid: number;
  childPid: number;
  cwd: string;
  command: string[];
  options: Record<string, string | boolean>;
}

/** A range of ports of its own for each service, away from the ephemeral range; busy ones are skipped by the service. */
function portRange(size: number): { first: number; last: number; env: string } {
  const first = 20_000 + Math.floor(Math.random() * 500) * 20;
  return { first, last: first + size - 1, env: `${first}-${first + size - 1}` };
}

/** Dead, or a zombie (this container's PID 1 does not reap orphans). */
function gone(pid: number): boolean {
  const p = readProc(pid);
  return p === null || p.state === 'Z';
}

async function standinInfo(t: Terminal): Promise<StandinInfo> {
  const res = await fetch(`http://127.0.0.1:${t.port}/info`);
  expect(res.status).toBe(200);
  return (await J(res)) as StandinInfo;
}

/** A JSON answer body, untyped (tests check its shape). */
const J = async (r: Response | Promise<Response>): Promise<any> => (await r).json();

let services: TestService[] = [];
afterEach(async () => {
  await Promise.all(services.map((s) => s.close()));
  services = [];
});

async function start(env: Record<string, string> = {}, size = 10): Promise<TestService & { range: ReturnType<typeof portRange> }> {
  const range = portRange(size);
  const t = await startTestService({
    // The readiness wait is a ceiling (generous for slow machines), never an assertion.
    env: { TTYD_BIN: STANDIN, TTYD_COMMAND: JSON.stringify(COMMAND), CONSOLE_TTYD_PORTS: range.env, CONSOLE_TTYD_READY_MS: '60000', ...env },
  });
  services.push(t);
  return Object.assign(t, { range });
}

const startTerminal = (t: TestService, projectId: string) => t.post('/api/ttyd/start', { projectId });

describe('POST /api/ttyd/start, status, context-window, stop', () => {
  it('starts a terminal in the project folder, lists it, serves it on its port, and stops its whole tree', async () => {
    const t = await start();
    const res = await startTerminal(t, A);
    expect(res.status).toBe(201);
    const term = (await J(res)) as Terminal;
    const cwd = path.join(t.dataDir, 'projects', A);
    expect(term).toMatchObject({ projectId: A, state: 'running', cwd, command: COMMAND, endedAt: null, rc: null, signal: null });
    expect(term.port).toBeGreaterThanOrEqual(t.range.first);
    expect(term.port).toBeLessThanOrEqual(t.range.last);
    expect(term.url).toBe(`http://127.0.0.1:${term.port}/`);
    // ttyd's own command-line syntax, from an argument array (no shell).
    expect(term.argv).toEqual([STANDIN, '--port', String(term.port), '--interface', '127.0.0.1', '--writable', '--check-origin', ...COMMAND]);

    // Reached over HTTP on its port: the page names its cwd and its command.
    const page = await fetch(term.url);
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain(`cwd: ${cwd}`);
    expect(html).toContain(fixture('forever.mjs'));
    const info = await standinInfo(term);
    expect(info.pid).toBe(term.pid);
    expect(info.cwd).toBe(cwd);
    expect(info.command).toEqual(COMMAND); // 'two words; echo $HOME' arrived as one argument
    expect(info.options).toMatchObject({ port: String(term.port), interface: '127.0.0.1', writable: true, 'check-origin': true });
    expect(gone(info.childPid)).toBe(false);
    expect(readProc(term.pid)?.pgid).toBe(term.pid); // leader of its own process group

    const status = await J(t.get('/api/ttyd/status'));
    expect(status).toEqual({ terminals: [term] });
    expect(await J(t.get(`/api/ttyd/status?projectId=${A}`))).toEqual({ terminals: [term] });
    expect(await J(t.get(`/api/ttyd/status?project_id=${B}`))).toEqual({ terminals: [] });

    const ctx = await t.get(`/api/ttyd/context-window?projectId=${A}`);
    expect(ctx.status).toBe(200);
    expect(await J(ctx)).toEqual({ projectId: A, cwd, command: COMMAND, port: term.port, url: term.url, startedAt: term.startedAt, pid: term.pid });

    const sys = await J(t.get('/api/system-status'));
    expect(sys.terminals).toEqual([expect.objectContaining({ projectId: A, pid: term.pid, port: term.port, state: 'running', startedAt: term.startedAt })]);

    const stop = await t.post('/api/ttyd/stop', { projectId: A });
    expect(stop.status).toBe(200);
    const stopped = await J(stop);
    expect(stopped.stopped).toBe(true);
    expect(stopped.terminal).toMatchObject({ projectId: A, state: 'stopped', pid: term.pid });
    expect(stopped.terminal.endedAt).not.toBeNull();
    // No process left: the stand-in (killed by SIGTERM) and its command, which sits in a
    // session of its own and is reached only through the captured tree.
    expect(gone(term.pid)).toBe(true);
    await waitFor(() => (gone(info.childPid) ? true : undefined), `the terminal's command ${info.childPid} to die`);
    await expect(fetch(term.url)).rejects.toThrow();

    expect((await J(t.get(`/api/ttyd/status?projectId=${A}`))).terminals[0].state).toBe('stopped');
    expect((await t.get(`/api/ttyd/context-window?projectId=${A}`)).status).toBe(404);
    const again = await t.post('/api/ttyd/stop', { project_id: A });
    expect(again.status).toBe(200);
    expect((await J(again)).stopped).toBe(false);

    const evs = await allEvents(t.url, `scopePrefix=terminal/${A}`);
    expect(evs.map((e) => [e.severity, e.summary])).toEqual([
      ['info', `ttyd started pid=${term.pid} port=${term.port}`],
      ['info', `ttyd stopped rc=${stopped.terminal.rc}`],
    ]);
    expect(evs[0]?.payload).toMatchObject({ project_id: A, pid: term.pid, port: term.port, cwd, argv: term.argv });
    expect(evs[1]?.payload).toMatchObject({ project_id: A, pid: term.pid, reason: 'stop' });
  });

  it('keeps one terminal per project: a second start answers the running one; another project gets another port', async () => {
    const t = await start();
    const [r1, r2] = await Promise.all([startTerminal(t, A), startTerminal(t, A)]);
    const statuses = [r1.status, r2.status].sort();
    expect(statuses).toEqual([200, 201]);
    const [a1, a2] = (await Promise.all([J(r1), J(r2)])) as Terminal[];
    expect(a2?.pid).toBe(a1?.pid);
    expect(a2?.port).toBe(a1?.port);

    const rb = await startTerminal(t, B);
    expect(rb.status).toBe(201);
    const b = (await J(rb)) as Terminal;
    expect(b.port).not.toBe(a1?.port);
    expect(b.cwd).toBe(path.join(t.dataDir, 'projects', B));
    const list = (await J(t.get('/api/ttyd/status'))).terminals as Terminal[];
    expect(list.map((x) => [x.projectId, x.state])).toEqual([
      [A, 'running'],
      [B, 'running'],
    ]);
    expect((await allEvents(t.url, 'scopePrefix=terminal/')).filter((e) => e.summary.startsWith('ttyd started'))).toHaveLength(2);
  });

  it('shows a terminal that died by itself as exited with its code; a new start replaces it', async () => {
    const t = await start();
    const first = (await (await startTerminal(t, A)).json()) as Terminal;
    const info = await standinInfo(first);
    await fetch(`http://127.0.0.1:${first.port}/exit?code=3`).then((r) => r.text());

    const dead = await waitFor(async () => {
      const [x] = (await J(t.get(`/api/ttyd/status?projectId=${A}`))).terminals as Terminal[];
      return x?.state === 'exited' ? x : undefined;
    }, 'the terminal to show as exited');
    expect(dead).toMatchObject({ pid: first.pid, port: first.port, rc: 3, signal: null });
    expect(dead.endedAt).not.toBeNull();
    expect(gone(first.pid)).toBe(true);
    await waitFor(() => (gone(info.childPid) ? true : undefined), 'its command to die');
    const exitEvent = await waitFor(async () => (await allEvents(t.url, `scopePrefix=terminal/${A}`)).find((e) => e.summary === 'ttyd exited rc=3'), 'the exit event');
    expect(exitEvent.severity).toBe('failure');
    expect(exitEvent.payload).toMatchObject({ project_id: A, pid: first.pid, rc: 3, reason: 'exit' });
    expect((await t.get(`/api/ttyd/context-window?projectId=${A}`)).status).toBe(404);

    const res = await startTerminal(t, A);
    expect(res.status).toBe(201);
    const second = (await J(res)) as Terminal;
    expect(second.pid).not.toBe(first.pid);
    expect(second.state).toBe('running');
    expect((await fetch(second.url)).status).toBe(200);
  });

  it('answers 503 when every port of the range is taken', async () => {
    const t = await start({}, 1);
    expect((await startTerminal(t, A)).status).toBe(201);
    const res = await startTerminal(t, B);
    expect(res.status).toBe(503);
    expect((await J(res)).detail).toMatch(new RegExp(`no free terminal port in ${t.range.first}-${t.range.first}`));
    expect((await J(t.get('/api/ttyd/status'))).terminals).toHaveLength(1);
  });

  it('answers 503 when the terminal program exits during start-up, and lists it as exited', async () => {
    const t = await start({ TTYD_BIN: '/bin/false' });
    const res = await startTerminal(t, A);
    expect(res.status).toBe(503);
    expect((await J(res)).detail).toMatch(/exited during start-up \(rc=1\)/);
    const [x] = (await J(t.get('/api/ttyd/status'))).terminals as Terminal[];
    expect(x).toMatchObject({ projectId: A, state: 'exited', rc: 1 });
  });

  it('validates ids and bodies: 422 malformed in a body, 400 in a query, 404 unknown project, 422 missing member', async () => {
    const t = await start();
    // A malformed id in a body is a 422 like any other invalid member.
    for (const [p, body] of [
      ['/api/ttyd/start', { projectId: '../etc' }],
      ['/api/ttyd/stop', { projectId: '..' }],
      ['/api/ttyd/start', { projectId: 'a/b' }],
    ] as const) {
      const res = await t.post(p, body);
      expect(res.status).toBe(422);
      expect((await J(res)).detail).toEqual([{ loc: ['body', 'projectId'], msg: expect.stringMatching(/^invalid projectId/), type: 'invalid_id' }]);
    }
    expect((await t.get('/api/ttyd/status?projectId=..')).status).toBe(400);
    expect((await t.get('/api/ttyd/context-window?projectId=%2e%2e')).status).toBe(400);
    for (const p of ['/api/ttyd/start', '/api/ttyd/stop']) {
      const res = await t.post(p, { projectId: 'no-such-project' });
      expect(res.status).toBe(404);
      expect((await J(res)).detail).toBe('unknown project no-such-project');
      const missing = await t.post(p, {});
      expect(missing.status).toBe(422);
      expect((await J(missing)).detail[0]).toMatchObject({ loc: ['body', 'projectId'], type: 'missing' });
    }
    expect((await t.get('/api/ttyd/context-window')).status).toBe(422);
    expect((await t.get(`/api/ttyd/context-window?projectId=${A}`)).status).toBe(404);
    expect((await J(t.get('/api/ttyd/status'))).terminals).toEqual([]);
  });
});

describe('a missing terminal program', () => {
  it('answers 503 saying the program is not on PATH, or that the configured path does not exist or is not executable', async () => {
    const notExecutable = path.join(fixture('.'), 'echo-argv.mjs'); // a file without the executable bit
    expect(fs.statSync(notExecutable).mode & 0o111).toBe(0);
    const cases: [string, RegExp][] = [
      ['ttyd-not-installed-anywhere', /terminal program "ttyd-not-installed-anywhere" not found on PATH; install ttyd or set TTYD_BIN/],
      ['/nonexistent/dir/ttyd', /terminal program \/nonexistent\/dir\/ttyd does not exist \(TTYD_BIN\)/],
      [notExecutable, /is not executable \(TTYD_BIN\)/],
    ];
    for (const [bin, detail] of cases) {
      const t = await start({ TTYD_BIN: bin });
      const res = await startTerminal(t, A);
      expect(res.status, bin).toBe(503);
      expect((await J(res)).detail).toMatch(detail);
      expect((await J(t.get('/api/ttyd/status'))).terminals).toEqual([]);
      expect(await allEvents(t.url, 'scopePrefix=terminal/')).toEqual([]);
    }
  });

  it('looks a bare TTYD_BIN name up on PATH', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-ttyd-path-'));
    try {
      fs.symlinkSync(STANDIN, path.join(dir, 'ttyd'));
      const t = await start({ TTYD_BIN: 'ttyd', PATH: `${dir}${path.delimiter}${process.env.PATH ?? ''}` });
      const res = await startTerminal(t, A);
      expect(res.status).toBe(201);
      const term = (await J(res)) as Terminal;
      expect(term.argv[0]).toBe(path.join(dir, 'ttyd'));
      expect((await fetch(term.url)).status).toBe(200);
    } finally {
      await Promise.all(services.map((s) => s.close()));
      services = [];
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('shutdown', () => {
  it('kills every terminal’s process tree and publishes the stops before the database closes', async () => {
    const t = await start();
    const a = (await (await startTerminal(t, A)).json()) as Terminal;
    const b = (await (await startTerminal(t, B)).json()) as Terminal;
    const children = [(await standinInfo(a)).childPid, (await standinInfo(b)).childPid];
    await t.stop();
    expect(gone(a.pid)).toBe(true);
    expect(gone(b.pid)).toBe(true);
    await waitFor(() => (children.every(gone) ? true : undefined), 'the terminals’ commands to die');

    // Restart on the same state: the stops were stored before the database closed.
    const again = await startTestService({ tmp: t.tmp, env: { CONSOLE_TTYD_PORTS: t.range.env } });
    services.push(again);
    const stops = (await allEvents(again.url, 'scopePrefix=terminal/')).filter((e) => e.summary.startsWith('ttyd stopped'));
    expect(stops.map((e) => [e.scope, e.payload.reason]).sort()).toEqual([
      [`terminal/${A}`, 'shutdown'],
      [`terminal/${B}`, 'shutdown'],
    ]);
    expect((await J(again.get('/api/ttyd/status'))).terminals).toEqual([]);
  });
});

describe('stop escalation', () => {
  it('kills a terminal that ignores SIGTERM with SIGKILL after the grace period', async () => {
    const t = await start({ TTYD_STANDIN_IGNORE_TERM: '1', CONSOLE_KILL_GRACE_MS: '300' });
    const term = (await J(startTerminal(t, A))) as Terminal;
    const child = (await standinInfo(term)).childPid;
    const stop = await J(t.post('/api/ttyd/stop', { projectId: A }));
    expect(stop.terminal).toMatchObject({ state: 'stopped', signal: 'SIGKILL', rc: 137 });
    expect(gone(term.pid)).toBe(true);
    await waitFor(() => (gone(child) ? true : undefined), 'its command to die');
  });
});

describe('HOST 0.0.0.0', () => {
  it('without CONSOLE_API_TOKEN: the terminal, a shell without a credential, still listens on loopback only', async () => {
    const t = await start({ HOST: '0.0.0.0' });
    const term = (await J(startTerminal(t, A))) as Terminal & { credential: string | null };
    expect(term.argv).toEqual(expect.arrayContaining(['--interface', '127.0.0.1']));
    expect(term.argv).not.toContain('--credential');
    expect(term.url).toBe(`http://127.0.0.1:${term.port}/`);
    expect(term.credential).toBeNull();
    expect((await standinInfo(term)).options.interface).toBe('127.0.0.1');
  });
});

describe('CONSOLE_API_TOKEN set', () => {
  const TOKEN = 'terminal-test-token';
  const auth = { authorization: `Bearer ${TOKEN}` };

  it('gives every terminal a credential of its own, handed out only behind the token; without it the terminal answers 401', async () => {
    for (const host of ['127.0.0.1', '0.0.0.0']) {
      const t = await start({ HOST: host, CONSOLE_API_TOKEN: TOKEN });
      const res = await t.post('/api/ttyd/start', { projectId: A }, { headers: auth });
      expect(res.status).toBe(201);
      const term = (await J(res)) as Terminal & { credential: string };
      expect(term.credential).toMatch(/^console:[A-Za-z0-9_-]{24}$/);
      // On HOST's interface (every one for 0.0.0.0), since a credential now guards it.
      if (host === '0.0.0.0') expect(term.argv).not.toContain('--interface');
      else expect(term.argv).toEqual(expect.arrayContaining(['--interface', '127.0.0.1']));
      // Its password is nowhere but in the credential: not in argv, events, the status without the token.
      const password = term.credential.slice('console:'.length);
      expect(term.argv).toEqual(expect.arrayContaining(['--credential', 'console:[REDACTED]']));
      const base = `http://127.0.0.1:${term.port}`;
      expect((await fetch(`${base}/`)).status).toBe(401);
      expect((await fetch(`${base}/`, { headers: { authorization: `Basic ${Buffer.from('console:wrong').toString('base64')}` } })).status).toBe(401);
      expect((await fetch(`${base}/`, { headers: { authorization: `Basic ${Buffer.from(term.credential).toString('base64')}` } })).status).toBe(200);
      const events = await (await t.get('/api/events?scopePrefix=terminal/', { headers: auth })).text();
      expect(events).toContain('"--credential"');
      expect(events).not.toContain(password);
      expect((await t.get('/api/ttyd/status')).status).toBe(401);
      const status = (await J(t.get(`/api/ttyd/status?projectId=${A}`, { headers: auth }))) as { terminals: { credential: string }[] };
      expect(status.terminals[0]?.credential).toBe(term.credential);
    }
  });
});

describe('TTYD_HOST', () => {
  it('names the host of terminal URLs', async () => {
    const t = await start({ TTYD_HOST: ' console.example.test ' });
    const term = (await (await startTerminal(t, A)).json()) as Terminal;
    expect(term.url).toBe(`http://console.example.test:${term.port}/`);
    expect(term.argv).toContain('127.0.0.1'); // still bound to the service's interface
  });
});
