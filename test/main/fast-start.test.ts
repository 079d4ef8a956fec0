/**
 * Fast start: `npm start` and `npm run engine` build first, but a build with
 * nothing changed compiles nothing and writes nothing under `dist/` (an incremental build,
 * `tsc -b` with its build info in `dist/`), so the CLI never rewrites `dist/` under a running
 * service; `npm run dev` rebuilds and restarts the service when a source file changes.
 * Everything runs in a copy of the project (sources, `dist/` with its build info, their times
 * kept), so the repository's own files are never touched.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../helpers/events.js';
import { REPO_ROOT, SAMPLE_STORE } from '../helpers/service.js';

/** Ceiling of a compilation on a loaded CI machine (a safety net, not an assertion). */
const COMPILE_CEILING_MS = 240_000;

let root: string;
let app: string;
const children: ChildProcess[] = [];

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'fast-start-'));
  app = path.join(root, 'app');
  fs.mkdirSync(app);
  for (const f of ['src', 'dist', 'bin', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) {
    fs.cpSync(path.join(REPO_ROOT, f), path.join(app, f), { recursive: true, preserveTimestamps: true });
  }
  fs.symlinkSync(path.join(REPO_ROOT, 'node_modules'), path.join(app, 'node_modules'));
  fs.cpSync(SAMPLE_STORE, path.join(root, 'store'), { recursive: true });
});

afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      process.kill(-(c.pid as number), 'SIGKILL');
      await once(c, 'exit');
    }
  }
  fs.rmSync(root, { recursive: true, force: true });
});

/** The service's environment: the copy's store and state, a free port. */
const serviceEnv = () => ({
  ...process.env,
  CONSOLE_DATA_DIR: path.join(root, 'store'),
  CONSOLE_STATE_DIR: path.join(root, 'state'),
  PORT: '0',
  HOST: '127.0.0.1',
  LOG_LEVEL: 'info',
  CONSOLE_WORKER_THREADS: '1',
});

/** Starts `npm <args>` in the copy as the leader of its own process group (so the test can end it all). */
function npm(args: string[], env: NodeJS.ProcessEnv = process.env): { child: ChildProcess; out: () => string } {
  const child = spawn('npm', args, { cwd: app, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  return { child, out: () => out };
}

/** Runs `npm <args>` to its end. */
async function npmRun(args: string[]): Promise<{ code: number | null; out: string }> {
  const run = npm(args);
  const [code] = (await once(run.child, 'exit')) as [number | null];
  return { code, out: run.out() };
}

/** Every file under the copy's `dist/` with its modification time. */
function distTimes(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const f of fs.readdirSync(path.join(app, 'dist'), { recursive: true, encoding: 'utf8' })) {
    const st = fs.statSync(path.join(app, 'dist', f));
    if (st.isFile()) out[f] = st.mtimeMs;
  }
  return out;
}

/** Ends a long-running npm script and everything it started (its process group). */
async function stopGroup(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  process.kill(-(child.pid as number), 'SIGTERM');
  await once(child, 'exit');
}

const listening = (out: string) => out.split('\n').filter((l) => l.includes('"msg":"console-backend listening"'));

describe('npm start and npm run engine', () => {
  it('build without writing anything under dist/ when nothing changed', { timeout: COMPILE_CEILING_MS * 2 }, async () => {
    // Brings the copy up to date (nothing to do when the repository's dist/ is).
    const first = await npmRun(['run', 'build']);
    expect(first.code, first.out).toBe(0);
    const before = distTimes();
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['.tsbuildinfo', 'main/index.js', 'engine-cli/cli.js']));

    const again = await npmRun(['run', 'build']);
    expect(again.code, again.out).toBe(0);
    expect(distTimes()).toEqual(before);

    const engine = await npmRun(['run', '-s', 'engine', '--', 'help']);
    expect(engine.code, engine.out).toBe(0);
    expect(engine.out).toContain('doctor');
    expect(distTimes()).toEqual(before);

    const start = npm(['start'], serviceEnv());
    await waitFor(() => (listening(start.out()).length === 1 ? true : undefined), 'npm start to serve', COMPILE_CEILING_MS);
    await stopGroup(start.child);
    expect(distTimes()).toEqual(before);
  });
});

describe('npm run dev', () => {
  it('serves, and rebuilds and restarts when a source file changes', { timeout: COMPILE_CEILING_MS * 3 }, async () => {
    const dev = npm(['run', 'dev'], serviceEnv());
    await waitFor(() => (listening(dev.out()).length === 1 ? true : undefined), 'npm run dev to serve', COMPILE_CEILING_MS);
    const url = (JSON.parse(listening(dev.out())[0] as string) as { url: string }).url;
    expect((await fetch(`${url}/api/health`)).status).toBe(200);

    const source = path.join(app, 'src', 'http', 'routes', 'service.ts');
    const built = path.join(app, 'dist', 'http', 'routes', 'service.js');
    const builtBefore = fs.statSync(built).mtimeMs;
    fs.appendFileSync(source, '\n// changed by the fast-start test\n');
    await waitFor(() => (listening(dev.out()).length === 2 ? true : undefined), 'the service to restart after the change', COMPILE_CEILING_MS);
    expect(fs.readFileSync(built, 'utf8')).toContain('// changed by the fast-start test');
    expect(fs.statSync(built).mtimeMs).toBeGreaterThan(builtBefore);
    // The first service stopped cleanly before the second started.
    expect(dev.out()).toContain('"msg":"stopped"');
    const url2 = (JSON.parse(listening(dev.out())[1] as string) as { url: string }).url;
    expect((await fetch(`${url2}/api/health`)).status).toBe(200);
    await stopGroup(dev.child);
  });
});
