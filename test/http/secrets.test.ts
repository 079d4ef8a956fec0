/**
 * The token stays secret, through the real server: CONSOLE_API_TOKEN never
 * reaches a log line (whatever URL or header a logged request carried), nor the environment of
 * the dispatch tool or of the terminal program. The logged service runs as its own process,
 * built (`npm run build`), its stdout read line by line; the children are real fixture
 * programs that report their environment.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor, type EngineEvent } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { startServiceProcess } from '../helpers/process.js';
import { fixture, makeTempStore, startTestService, type TestService } from '../helpers/service.js';

/** Characters that percent-encoding changes (`~` is left as it is by encodeURIComponent, `%7E` by others). */
const TOKEN = 'Sekr3t-t0ken.~+/q=';
const AUTH = { authorization: `Bearer ${TOKEN}` };

/** Every form in which the token could be written: as is, and percent-encoded (either case of hex digits, `~` too). */
const FORMS = [TOKEN, encodeURIComponent(TOKEN), encodeURIComponent(TOKEN).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()), TOKEN.replace(/[~+/=]/g, (c) => `%${c.charCodeAt(0).toString(16)}`)];

const services: TestService[] = [];
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const s of services.splice(0).reverse()) await s.close();
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/**
 * The compiled service as its own process (as `npm start` runs it), its stdout being its log,
 * on a temp copy of the sample store.
 */
async function startLogged(env: Record<string, string> = {}): Promise<{ url: string; stateDir: string; lines: () => Record<string, unknown>[]; raw: () => string }> {
  const store = makeTempStore('sample');
  cleanups.push(() => fs.rmSync(store.tmp, { recursive: true, force: true }));
  const svc = await startServiceProcess(store, { LOG_LEVEL: 'info', CONSOLE_API_TOKEN: TOKEN, ...env }, (fn) => cleanups.push(fn));
  return {
    url: svc.url,
    stateDir: store.stateDir,
    raw: () => svc.stdout(),
    lines: () =>
      svc
        .stdout()
        .split('\n')
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}

/** Waits until a logged line matches `pred` (lines are written asynchronously; the ceiling is a safety net). */
const lineWhere = (log: { lines: () => Record<string, unknown>[] }, pred: (l: Record<string, unknown>) => boolean, what: string) => waitFor(() => log.lines().find(pred), `a log line ${what}`);

describe('the token in logs', () => {
  it('writes no credential of a logged request: its URL’s query token (any spelling), its headers, the token anywhere', async () => {
    const log = await startLogged();
    // A real fault that the service reports with the request's URL (an unexpected error: a
    // trigger in the state database refuses every click, as a violated constraint would).
    const db = new Database(path.join(log.stateDir, 'console-state.db'));
    db.exec(`CREATE TRIGGER refuse_clicks BEFORE INSERT ON clicks BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;`);
    db.close();
    const queries = [
      `?token=${encodeURIComponent(TOKEN)}`,
      `?token=${TOKEN}`,
      `?x=1&%74oken=${encodeURIComponent(TOKEN)}`,
      `?access_token=${encodeURIComponent(TOKEN)}&token=${FORMS[2]}`,
      `?note=${encodeURIComponent(`see ${TOKEN}`)}`,
    ];
    for (const q of queries) {
      const res = await rawRequest(log.url, `/api/clicks${q}`, {
        method: 'POST',
        headers: { ...AUTH, 'content-type': 'application/json', cookie: `token=${TOKEN}`, 'x-api-token': TOKEN },
        body: JSON.stringify({ projectId: 'harbor-lights', target: 'take-card' }),
      });
      expect({ q, status: res.status }).toEqual({ q, status: 500 });
    }
    // The stream, whose query token is a credential, and the refusal of a wrong token.
    const stream = await fetch(`${log.url}/api/events/stream?token=${encodeURIComponent(TOKEN)}`);
    await stream.body?.cancel();
    await fetch(`${log.url}/api/system-status?token=${encodeURIComponent(TOKEN)}`, { headers: { authorization: `Bearer ${TOKEN}x` } });
    await lineWhere(log, (l) => l.route === '/api/system-status' && l.status === 401, 'for the last request');

    // The fault is logged, with the URL (its credentials replaced), as is each request.
    const reported = log.lines().filter((l) => l.msg === 'unhandled error');
    expect(reported.map((l) => l.url)).toEqual([
      '/api/clicks?token=[REDACTED]',
      '/api/clicks?token=[REDACTED]',
      '/api/clicks?x=1&%74oken=[REDACTED]',
      '/api/clicks?access_token=[REDACTED]&token=[REDACTED]',
      '/api/clicks?note=see%20[REDACTED]',
    ]);
    expect(reported[0]).toMatchObject({ level: 50, method: 'POST', err: { message: expect.stringContaining('refused by the test') } });
    const raw = log.raw();
    for (const form of FORMS) expect(raw, form).not.toContain(form);
  });
});

describe('the token in children’s environment', () => {
  it('is not in the environment of the dispatch tool', async () => {
    const t = await startTestService({ env: { CONSOLE_API_TOKEN: TOKEN, DISPATCH_CLI: fixture('print-env.mjs') } });
    services.push(t);
    const res = await t.post('/api/proposals/generate', { project: 'harbor-lights' }, { headers: AUTH });
    expect(res.status).toBe(202);
    const events = await waitFor(async () => {
      const evs = (await (await t.get('/api/events?scopePrefix=engine/generation&limit=500', { headers: AUTH })).json()) as EngineEvent[];
      return evs.some((e) => e.summary.startsWith('dispatch_cli exited')) ? evs : undefined;
    }, 'the job to exit');
    const lines = events.filter((e) => e.payload.source === 'dispatch_cli').map((e) => e.summary);
    const names = lines.map((l) => l.slice(0, l.indexOf('=')));
    // What it is given (the sanity of the check): the store and its job mark.
    expect(names).toEqual(expect.arrayContaining(['CONSOLE_DATA_DIR', 'CONSOLE_JOB_ID', 'PATH']));
    expect(names).not.toContain('CONSOLE_API_TOKEN');
    for (const l of lines) expect(l).not.toContain(TOKEN);
  });

  it('is not in the environment of the terminal program (nor, so, of its command)', async () => {
    const first = 20_000 + Math.floor(Math.random() * 500) * 20;
    const t = await startTestService({
      env: {
        CONSOLE_API_TOKEN: TOKEN,
        TTYD_BIN: fixture('ttyd-standin.mjs'),
        TTYD_COMMAND: JSON.stringify([process.execPath, fixture('forever.mjs')]),
        CONSOLE_TTYD_PORTS: `${first}-${first + 9}`,
        CONSOLE_TTYD_READY_MS: '60000',
      },
    });
    services.push(t);
    const res = await t.post('/api/ttyd/start', { projectId: 'harbor-lights' }, { headers: AUTH });
    expect(res.status).toBe(201);
    const { port, credential } = (await res.json()) as { port: number; credential: string };
    // The terminal's own credential, as the API handed it out behind the token.
    const info = (await (await fetch(`http://127.0.0.1:${port}/info`, { headers: { authorization: `Basic ${Buffer.from(credential).toString('base64')}` } })).json()) as {
      env: Record<string, string>;
    };
    expect(Object.keys(info.env)).toEqual(expect.arrayContaining(['CONSOLE_TERMINAL_OF', 'PATH']));
    expect(info.env).not.toHaveProperty('CONSOLE_API_TOKEN');
    expect(Object.values(info.env).some((v) => v.includes(TOKEN))).toBe(false);
  });
});
