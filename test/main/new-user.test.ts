/**
 * As a new user would: the package's start script (what `npm start` runs after its build, through
 * `sh`) with only a state directory set, so the bundled sample store is served, its C library
 * told to keep 2 malloc arenas; a real generation through the real
 * dispatch tool produces a take that the takes and lineage routes show, and every line the
 * tool printed is in `GET /api/events`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor, waitForJobEvents } from '../helpers/events.js';
import { answersFor, freePort } from '../helpers/process.js';
import { recordingEnv, REPO_ROOT } from '../helpers/service.js';

let child: ChildProcess;
let url: string;
let tmp: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'console-e2e-'));
  const port = await freePort();
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, PORT: String(port), CONSOLE_STATE_DIR: path.join(tmp, 'state'), LOG_LEVEL: 'warn', ...recordingEnv() };
  // The script as npm runs it (`sh -c`), its `node` this test's. It execs the service: signals reach it.
  const script = (JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start;
  env.PATH = `${path.dirname(process.execPath)}${path.delimiter}${env.PATH ?? ''}`;
  child = spawn('sh', ['-c', script], { cwd: REPO_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  url = `http://127.0.0.1:${port}`;
  await waitFor(() => answersFor(url, path.join(tmp, 'state')), 'the service to listen');
});

afterAll(async () => {
  if (child.exitCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('a new user on the bundled sample store', () => {
  it('runs with 2 malloc arenas, as the start script sets (the system status reports it)', async () => {
    const status = (await (await fetch(`${url}/api/system-status`)).json()) as { memory: { mallocArenaMax: string | null; rssBytes: number; heapUsedBytes: number } };
    expect(status.memory.mallocArenaMax).toBe('2');
    expect(status.memory.rssBytes).toBeGreaterThan(status.memory.heapUsedBytes);
  });

  it('serves the sample projects from a working copy, leaving the repository untouched', async () => {
    const projects = (await (await fetch(`${url}/api/projects`)).json()) as { id: string }[];
    expect(projects.map((p) => p.id)).toEqual(['harbor-lights', 'night-market']);
    expect(fs.existsSync(path.join(tmp, 'state', 'sample-store', 'projects', 'harbor-lights', 'project.json'))).toBe(true);
  });

  it('runs a real generation whose take shows in the takes and lineage routes, with every printed line as an event', async () => {
    const before = (await (await fetch(`${url}/api/beats/b01/takes?projectId=harbor-lights`)).json()) as { take_id: string }[];
    const res = await fetch(`${url}/api/proposals/generate`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ project: 'harbor-lights', shotId: 'sh010', model: 'studio-v9' }),
    });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    const { exit, lines } = await waitForJobEvents(url, proposalId);
    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0', payload: { proposal_id: proposalId, rc: 0 } });

    // Every line, numbered 1..n per pipe with no gap, and the counts the job recorded.
    const job = (await (await fetch(`${url}/api/jobs/${proposalId}`)).json()) as { stdoutLines: number; stderrLines: number };
    const stdout = lines.filter((e) => e.severity === 'info');
    const stderr = lines.filter((e) => e.severity === 'warning');
    expect(stdout.map((e) => e.detail)).toEqual(stdout.map((_e, i) => `${proposalId} stdout line ${i + 1}`));
    expect(stderr.map((e) => e.detail)).toEqual(stderr.map((_e, i) => `${proposalId} stderr line ${i + 1}`));
    expect(stdout).toHaveLength(job.stdoutLines);
    expect(stderr).toHaveLength(job.stderrLines);
    expect(stderr.map((e) => e.summary)).toEqual([expect.stringContaining('model studio-v9 is not available locally')]);
    const wrote = stdout.find((e) => e.summary.startsWith('wrote take '));
    expect(wrote).toBeDefined();
    const takeId = /^wrote take (tk_\d+)/.exec(wrote!.summary)![1] as string;
    expect(stdout.at(-1)!.summary).toBe('done');

    const takes = (await (await fetch(`${url}/api/beats/b01/takes?projectId=harbor-lights`)).json()) as { take_id: string; parent_take_id: string | null }[];
    expect(takes).toHaveLength(before.length + 1);
    const take = takes.find((t) => t.take_id === takeId);
    expect(take?.parent_take_id).toBe('tk_0004');

    const lineage = (await (await fetch(`${url}/api/beats/b01/lineage?projectId=harbor-lights&takeId=${takeId}`)).json()) as {
      nodes: { kind: string; id: string }[];
    };
    expect(lineage.nodes.filter((n) => n.kind === 'take').map((n) => n.id)).toEqual(['tk_0001', 'tk_0002', 'tk_0004', takeId]);

    const media = path.join(tmp, 'state', 'sample-store', 'projects', 'harbor-lights', 'media', `${takeId}.png`);
    expect(fs.readFileSync(media).subarray(1, 4).toString()).toBe('PNG');
    // Nothing was written into the repository's bundled store.
    expect(fs.existsSync(path.join(REPO_ROOT, 'sample-store', 'projects', 'harbor-lights', 'takes', `${takeId}.json`))).toBe(false);
  });

  it('runs a dry run that writes no take', async () => {
    const res = await fetch(`${url}/api/generate/night-market`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ shot_id: 'sh030', dry_run: true }),
    });
    expect(res.status).toBe(202);
    const { proposalId } = (await res.json()) as { proposalId: string };
    const { exit } = await waitForJobEvents(url, proposalId);
    expect(exit.severity).toBe('success');
    expect(await (await fetch(`${url}/api/beats/b02/takes?projectId=night-market`)).json()).toEqual([]);
    const spawned = (await allEvents(url, 'scopePrefix=engine/generation')).find((e) => e.payload.proposal_id === proposalId);
    expect(spawned?.payload.argv).toEqual([process.execPath, path.join(REPO_ROOT, 'dist', 'dispatch', 'cli.js'), '--project', 'night-market', '--shot', 'sh030', '--dry-run']);
  });

  it('stops on SIGTERM with exit code 0', async () => {
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
  });
});
