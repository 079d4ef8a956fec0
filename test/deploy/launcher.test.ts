/**
 * bin/console-backend, the start script `npm start` runs (README, "Memory"): jemalloc preloaded when installed
 * (Debian's libjemalloc2, which .ci/run installs; a machine without it fails here, naming it), glibc's malloc with 2
 * arenas when LD_PRELOAD is set (even empty), a variable already set kept; the variables it set itself are not
 * handed to a job (a stand-in dispatch tool prints its environment). The system status reports what it runs with.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, waitForJobEvents } from '../helpers/events.js';
import { answersFor, freePort } from '../helpers/process.js';
import { fixture, makeTempStore, REPO_ROOT } from '../helpers/service.js';

const LAUNCHER = path.join(REPO_ROOT, 'bin', 'console-backend');
const LIBRARY_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib64', '/usr/lib', '/usr/local/lib'];
const ALLOCATOR_VARIABLES = ['LD_PRELOAD', 'MALLOC_CONF', 'MALLOC_ARENA_MAX', 'CONSOLE_LAUNCHER_SET'];

interface Memory {
  allocator: string;
  mallocArenaMax: string | null;
  mallocConf: string | null;
}

let running: { child: ChildProcess; tmp: string }[] = [];

beforeAll(() => {
  if (!LIBRARY_DIRS.some((d) => fs.existsSync(path.join(d, 'libjemalloc.so.2'))))
    throw new Error('libjemalloc.so.2 is missing: the start script preloads jemalloc when installed (Debian’s libjemalloc2: apt-get install libjemalloc2; .ci/run installs it)');
});

afterEach(async () => {
  for (const { child, tmp } of running) {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    }
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  running = [];
});

/** Starts the service through the start script with `env` (this test's node first on PATH); its URL once it answers. */
async function start(env: Record<string, string>): Promise<string> {
  const { tmp, dataDir, stateDir } = makeTempStore('sample');
  const port = await freePort();
  const child = spawn('sh', [LAUNCHER], {
    cwd: REPO_ROOT,
    env: {
      PATH: `${path.dirname(process.execPath)}${path.delimiter}${process.env.PATH ?? ''}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      CONSOLE_DATA_DIR: dataDir,
      CONSOLE_STATE_DIR: stateDir,
      CONSOLE_WORKER_THREADS: '1',
      LOG_LEVEL: 'warn',
      DISPATCH_CLI: fixture('print-env.mjs'),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  running.push({ child, tmp });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`the service exited at start-up: ${stderr}`);
    return answersFor(url, stateDir);
  }, 'the service to answer');
  return url;
}

async function memoryOf(url: string): Promise<Memory> {
  return ((await (await fetch(`${url}/api/system-status`)).json()) as { memory: Memory }).memory;
}

/** The names and values a job was started with (the stand-in tool prints `NAME=value` lines). */
async function jobEnvironment(url: string): Promise<Map<string, string>> {
  const res = await fetch(`${url}/api/proposals/generate`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"project":"harbor-lights"}' });
  expect(res.status).toBe(202);
  const { proposalId } = (await res.json()) as { proposalId: string };
  const { lines } = await waitForJobEvents(url, proposalId);
  return new Map(lines.map((e) => [e.summary.slice(0, e.summary.indexOf('=')), e.summary.slice(e.summary.indexOf('=') + 1)]));
}

describe('the start script (bin/console-backend)', () => {
  it('preloads jemalloc with its options and bounds glibc’s arenas, and hands none of it to a job', async () => {
    const url = await start({});
    const launcher = fs.readFileSync(LAUNCHER, 'utf8');
    expect(await memoryOf(url)).toMatchObject({ allocator: 'jemalloc', mallocArenaMax: '2', mallocConf: /MALLOC_CONF=(\S+)/.exec(launcher)?.[1] });
    const env = await jobEnvironment(url);
    // The check's sanity: the tool's environment is there.
    expect(env.get('CONSOLE_DATA_DIR')).toBeTruthy();
    for (const name of ALLOCATOR_VARIABLES) expect(env.has(name), name).toBe(false);
  });

  it('leaves the allocator to glibc when LD_PRELOAD is set, even empty, with 2 arenas', async () => {
    const url = await start({ LD_PRELOAD: '' });
    expect(await memoryOf(url)).toMatchObject({ allocator: 'libc', mallocArenaMax: '2' });
  });

  it('keeps what the operator set, and hands that on to a job', async () => {
    const url = await start({ MALLOC_ARENA_MAX: '4', MALLOC_CONF: 'background_thread:false' });
    expect(await memoryOf(url)).toMatchObject({ allocator: 'jemalloc', mallocArenaMax: '4', mallocConf: 'background_thread:false' });
    const env = await jobEnvironment(url);
    expect(env.get('MALLOC_ARENA_MAX')).toBe('4');
    expect(env.get('MALLOC_CONF')).toBe('background_thread:false');
    // The one it did set (the preload) stays the service's.
    expect(env.has('LD_PRELOAD')).toBe(false);
    expect(env.get('CONSOLE_LAUNCHER_SET')).toBeUndefined();
  });
});
