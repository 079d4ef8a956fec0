/**
 * Event ids after a crash (api-decisions.md, Events: "never reused after a restart"). The
 * service runs as its own process (`node dist/main/index.js`, as `npm start` does) while a
 * generation job floods the bus; it is killed with SIGKILL, so nothing gets flushed or closed.
 * The ids a live stream client saw must all be stored, covered by `meta.event_id_reserved`,
 * and never handed out again by the next run on the same state database.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import Database from '../../src/state/sqlite/binding.js';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents } from '../helpers/events.js';
import { fixture, makeTempStore, recordingEnv, REPO_ROOT, startTestService, type TestService, publishOn } from '../helpers/service.js';
import { SseClient } from '../helpers/sse.js';

const ENTRY = path.join(REPO_ROOT, 'dist', 'main', 'index.js');

let child: ChildProcess | undefined;
let jobPid: number | undefined;
let client: SseClient | undefined;
let restarted: TestService | undefined;
let root: string | undefined;

afterEach(async () => {
  client?.close();
  if (child && child.exitCode === null && child.signalCode === null) {
    child.kill('SIGKILL');
    await new Promise((r) => child?.once('exit', r));
  }
  if (jobPid !== undefined) {
    try {
      process.kill(-jobPid, 'SIGKILL'); // the job's own process group, started by the killed service
    } catch {
      // already gone
    }
  }
  await restarted?.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
  child = jobPid = client = restarted = root = undefined;
});

/** Starts the built service as a child process and resolves with its URL (from its log). */
async function startProcess(env: Record<string, string>): Promise<string> {
  child = spawn(process.execPath, [ENTRY], { env: { ...recordingEnv(), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const lines = readline.createInterface({ input: child.stdout! });
  const exited = new Promise<never>((_, reject) => child?.once('exit', (code) => reject(new Error(`service exited (${code}) before listening: ${stderr}`))));
  const listening = new Promise<string>((resolve) => {
    lines.on('line', (line) => {
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string };
        if (rec.msg === 'console-backend listening' && rec.url) resolve(rec.url);
      } catch {
        // not a log record
      }
    });
  });
  const ceiling = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('service did not start')), 30_000).unref());
  return Promise.race([listening, exited, ceiling]);
}

describe('bus: ids after a crash (SIGKILL)', () => {
  it('stores every id a client saw, reserves beyond it, and never hands it out again after a restart', async () => {
    if (!fs.existsSync(ENTRY)) throw new Error(`${ENTRY} is missing: run npm run build first`);
    const temp = makeTempStore('sample');
    root = temp.tmp;
    const url = await startProcess({
      PATH: process.env.PATH ?? '',
      PORT: '0',
      HOST: '127.0.0.1',
      CONSOLE_DATA_DIR: temp.dataDir,
      CONSOLE_STATE_DIR: temp.stateDir,
      CONSOLE_WORKER_THREADS: '1',
      DISPATCH_CLI: fixture('ev-lines.mjs'),
      LOG_LEVEL: 'info',
      // The job prints lines for as long as the service lives: the bus is busy when it dies.
      EV_LINES: '100000000',
      EV_BATCH: '50',
      EV_INTERVAL_MS: '2',
    });

    client = new SseClient(`${url}/api/events/stream`);
    await client.until((c) => c.frames.length > 0, 'the retry frame');
    const accepted = await fetch(`${url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: 'harbor-lights' }),
    });
    expect(accepted.status).toBe(202);
    jobPid = ((await accepted.json()) as { pid: number }).pid;
    await client.until((c) => c.events.length >= 500, '500 live events');

    const proc = child as ChildProcess;
    const died = new Promise((r) => proc.once('exit', r));
    proc.kill('SIGKILL');
    await died;
    await client.done; // the stream breaks with the process
    const seen = client.events;
    const maxSeen = seen.reduce((m, e) => Math.max(m, Number(e.id)), -Infinity);

    // The state database exactly as the crash left it.
    const db = new Database(path.join(temp.stateDir, 'console-state.db'), { fileMustExist: true });
    let reserved: number;
    let maxStored: number;
    try {
      reserved = Number((db.prepare(`SELECT value FROM meta WHERE key = 'event_id_reserved'`).get() as { value: string }).value);
      maxStored = (db.prepare('SELECT max(id) AS m FROM events').get() as { m: number }).m;
    } finally {
      db.close();
    }
    expect(maxStored).toBeGreaterThanOrEqual(maxSeen); // stored before delivered
    expect(reserved).toBeGreaterThanOrEqual(maxStored);

    restarted = await startTestService({ tmp: temp.tmp });
    const stored = await allEvents(restarted.url);
    const byId = new Map(stored.map((e) => [e.id, e]));
    for (const e of seen) expect(byId.get(e.id)).toEqual(e); // everything a client saw survived the crash

    const fresh = publishOn(restarted, { severity: 'info', scope: 'test/crash', summary: 'after the crash' });
    expect(Number(fresh.id)).toBeGreaterThan(reserved);
    const newer = await allEvents(restarted.url, '', String(maxStored));
    expect(newer.length).toBeGreaterThan(0);
    for (const e of newer) expect(Number(e.id)).toBeGreaterThan(reserved);
    expect(newer.map((e) => e.id)).toContain(fresh.id);
  });
});
