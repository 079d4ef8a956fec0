/**
 * Dispatch tool faults: a tool that exits before reading anything, one
 * that closes stdout early and keeps running, one killed by a signal, one that is not
 * executable (or not something node can run), one whose grandchild holds its output open
 * after it exits: each ends in a final job state with a clear event, and none leaks a process
 * or a pipe. The compiled service runs as a separate process (when the test runs as root,
 * without root's file-permission override, so a file without read permission is unreadable
 * to it); its descriptors
 * are counted in /proc/<pid>/fd and leftover processes are found by a marker in their
 * environment (zombies count as gone: this container's PID 1 does not reap).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor, type EngineEvent } from '../helpers/events.js';
import { rawRequest } from '../helpers/raw.js';
import { markedProcesses, procState, startServiceProcess, TOOL, type FdCount, type ServiceProcess } from '../fixtures/rel-b-service.js';

const ROOT = process.getuid?.() === 0;

let svc: ServiceProcess;
let tools: string;
/** DISPATCH_CLI: a symbolic link, pointed at rel-b-tool.mjs or at one of the broken tools. */
let toolLink: string;
let baseline: FdCount;
let jobsRun = 0;
let maxProcesses = 0;

const get = async <T>(p: string): Promise<{ status: number; body: T }> => {
  const r = await rawRequest(svc.url, p);
  return { status: r.status, body: r.json() as T };
};
const post = async <T>(p: string, body: unknown): Promise<{ status: number; body: T }> => {
  const r = await rawRequest(svc.url, p, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: r.status, body: r.json() as T };
};

interface Job {
  proposalId: string;
  pid: number;
  state: string;
  rc: number | null;
  signal: string | null;
  stdoutLines: number;
  stderrLines: number;
}

async function start(mode: string): Promise<{ proposalId: string; pid: number }> {
  const r = await post<{ proposalId: string; pid: number }>('/api/proposals/generate', { project: 'relb', model: mode });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  jobsRun++;
  return r.body;
}

/** The job's events (spawn, lines, exit) once its exit is stored, and its final record. */
async function finished(proposalId: string): Promise<{ job: Job; events: EngineEvent[]; exit: EngineEvent; lines: EngineEvent[] }> {
  const job = await waitFor(async () => {
    maxProcesses = Math.max(maxProcesses, markedProcesses(svc.mark, [svc.pid]).length);
    const r = await get<Job>(`/api/jobs/${proposalId}`);
    return r.body.state === 'running' ? undefined : r.body;
  }, `the end of ${proposalId}`);
  const events: EngineEvent[] = [];
  for (let cursor = '0'; ; ) {
    const page = (await get<EngineEvent[]>(`/api/events?scopePrefix=engine/generation&limit=500&sinceId=${cursor}`)).body;
    events.push(...page.filter((e) => e.payload.proposal_id === proposalId || e.detail?.startsWith(`${proposalId} `)));
    if (page.length < 500) break;
    cursor = (page.at(-1) as EngineEvent).id;
  }
  const exits = events.filter((e) => e.summary.startsWith('dispatch_cli exited'));
  expect(exits).toHaveLength(1);
  expect(events.at(-1)).toBe(exits[0]); // the exit follows every line
  return { job, events, exit: exits[0] as EngineEvent, lines: events.filter((e) => e.payload.source === 'dispatch_cli') };
}

/** Waits until the job has printed a line starting with `prefix`; returns the line. */
async function lineOf(proposalId: string, prefix: string): Promise<string> {
  return waitFor(async () => {
    maxProcesses = Math.max(maxProcesses, markedProcesses(svc.mark, [svc.pid]).length);
    const page = (await get<EngineEvent[]>(`/api/events?scopePrefix=engine/generation&limit=500`)).body;
    return page.find((e) => e.detail?.startsWith(`${proposalId} `) && e.summary.startsWith(prefix))?.summary;
  }, `a line "${prefix}…" of ${proposalId}`);
}

/** Sockets (the output pipes are socket pairs) open in process `pid`; -1 once it is gone. */
function socketsOf(pid: number): number {
  try {
    return fs.readdirSync(`/proc/${pid}/fd`).filter((fd) => {
      try {
        return fs.readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:');
      } catch {
        return false;
      }
    }).length;
  } catch {
    return -1;
  }
}

const gone = (pid: number) => {
  const s = procState(pid);
  return s === null || s === 'Z';
};
const waitGone = (pid: number, what: string) => waitFor(() => (gone(pid) ? true : undefined), `${what} (pid ${pid}) to end`);

beforeAll(async () => {
  tools = fs.mkdtempSync(path.join(os.tmpdir(), 'rel-b-tools-'));
  fs.chmodSync(tools, 0o755);
  toolLink = path.join(tools, 'tool.js');
  fs.symlinkSync(TOOL, toolLink);
  // A kill grace never reached: a cancelled tool ends by SIGTERM (rc 143) once it runs (Node's
  // handler re-raises it), which on a loaded machine can take longer than the harness's 1 s.
  svc = await startServiceProcess({ env: { DISPATCH_CLI: toolLink, CONSOLE_KILL_GRACE_MS: '60000' }, ...(ROOT ? { withoutFileOverride: true } : {}) });
  // Warm-up: the first job creates what the service keeps for every later one (libuv's
  // child-signal pipe); the baseline is taken after it.
  const { proposalId } = await start('burst:3');
  await finished(proposalId);
  baseline = await waitFor(() => {
    const fds = svc.fds();
    // The listening socket, its stderr to this harness and its spawn helper's channel: no client connection left.
    return fds.sockets <= 3 ? fds : undefined;
  }, 'the warm-up connections to close');
});

afterAll(async () => {
  await svc?.close();
  for (const pid of svc ? markedProcesses(svc.mark) : []) process.kill(pid, 'SIGKILL');
  if (tools) fs.rmSync(tools, { recursive: true, force: true });
});

describe('dispatch tool faults', () => {
  it('a tool that exits at once, before reading anything: exited ok, rc 0, no line', async () => {
    const { proposalId, pid } = await start('exit-now');
    const { job, exit, lines } = await finished(proposalId);
    expect(job).toMatchObject({ state: 'exited ok', rc: 0, signal: null, stdoutLines: 0, stderrLines: 0 });
    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0', detail: null });
    expect(lines).toEqual([]);
    await waitGone(pid, 'the tool');
  });

  it('a tool killed by a signal (it SIGKILLs itself): exited failed, rc 137, "terminated by SIGKILL"', async () => {
    const { proposalId, pid } = await start('self-kill');
    const { job, exit, lines } = await finished(proposalId);
    expect(job).toMatchObject({ state: 'exited failed', rc: 137, signal: 'SIGKILL' });
    expect(exit).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=137', detail: 'terminated by SIGKILL', payload: { rc: 137 } });
    expect(lines.map((e) => e.summary)).toEqual([`ready ${pid}`]);
    await waitGone(pid, 'the tool');
  });

  it('a tool that closes stdout and runs on stays running (its stderr still read) until it exits by itself', async () => {
    const { proposalId, pid } = await start('close-stdout-exit:500');
    await lineOf(proposalId, 'stdout closed');
    const { job, exit, lines } = await finished(proposalId);
    expect(job).toMatchObject({ state: 'exited ok', rc: 0, stdoutLines: 0, stderrLines: 2 });
    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0' });
    expect(lines.map((e) => [e.severity, e.summary])).toEqual([
      ['warning', `stdout closed ${pid}`],
      ['warning', 'exiting'],
    ]);
  });

  it.each([['close-stdout'], ['close-both']])('%s, then runs forever: the job stays running until cancelled (rc 143), nothing left behind', async (mode) => {
    const { proposalId, pid } = await start(mode);
    // The tool has closed its end of stdout (close-stdout says so on stderr; close-both keeps
    // no socket, the pipes' kind of descriptor), and lives on.
    if (mode === 'close-stdout') await lineOf(proposalId, 'stdout closed');
    else await waitFor(() => (socketsOf(pid) === 0 ? true : undefined), 'the tool to close stdout and stderr');
    await new Promise((r) => setTimeout(r, 300));
    expect((await get<Job>(`/api/jobs/${proposalId}`)).body.state).toBe('running');
    expect(gone(pid)).toBe(false);

    expect((await post(`/api/jobs/${proposalId}/cancel`, {})).status).toBe(202);
    const { job, exit } = await finished(proposalId);
    expect(job).toMatchObject({ state: 'exited failed', rc: 143, signal: 'SIGTERM' });
    expect(exit).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=143', detail: 'terminated by SIGTERM (cancelled)' });
    await waitGone(pid, 'the tool');
  });

  it.each([['group'], ['session']])('a grandchild (in the tool’s %s) holding stdout and stderr after the tool exits: the exit is published and the grandchild ended', async (where) => {
    const { proposalId, pid } = await start(`grandchild:${where}`);
    const grandchild = Number((await lineOf(proposalId, 'grandchild ')).split(' ')[1]);
    const { job, exit, lines } = await finished(proposalId);
    expect(job).toMatchObject({ state: 'exited ok', rc: 0 });
    expect(exit).toMatchObject({ severity: 'success', summary: 'dispatch_cli exited rc=0' });
    expect(lines[0]?.summary).toBe(`grandchild ${grandchild}`);
    // Whatever the grandchild printed before it was ended is published, in order, before the exit.
    expect(lines.slice(1).map((e) => e.summary)).toEqual(lines.slice(1).map((_, i) => `tick ${i + 1}`));
    await waitGone(pid, 'the tool');
    await waitGone(grandchild, 'the grandchild');
  });

  describe('a DISPATCH_CLI that is not a runnable tool', () => {
    const useTool = (file: string) => {
      fs.rmSync(toolLink);
      fs.symlinkSync(file, toolLink);
    };
    afterAll(() => useTool(TOOL));

    it('a JavaScript file without the executable bit runs all the same (`node <file>`): exited ok', async () => {
      const file = path.join(tools, 'plain.js');
      fs.writeFileSync(file, "process.stdout.write('plain tool ran\\n');\n", { mode: 0o644 });
      useTool(file);
      const { proposalId } = await start('any');
      const { job, lines } = await finished(proposalId);
      expect(job).toMatchObject({ state: 'exited ok', rc: 0 });
      expect(lines.map((e) => e.summary)).toEqual(['plain tool ran']);
    });

    it.each([
      ['binary garbage', 'garbage.bin', () => Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919 + 13) % 256)), 0o644, /SyntaxError/],
      ['a native executable', 'true-elf', () => fs.readFileSync('/bin/true'), 0o755, /SyntaxError/],
      ['a shell script', 'tool.sh', () => '#!/bin/sh\necho from sh\nexit 0\n', 0o755, /SyntaxError/],
      ['a file without read permission', 'unreadable.js', () => "console.log('never')\n", 0o000, /EACCES|permission denied/],
    ])('%s: node fails, the job ends exited failed with rc 1 and node’s error as warning lines', async (_what, name, content, mode, error) => {
      const file = path.join(tools, name);
      fs.writeFileSync(file, content());
      fs.chmodSync(file, mode);
      useTool(file);
      const { proposalId, pid } = await start('any');
      const { job, exit, lines } = await finished(proposalId);
      expect(job).toMatchObject({ state: 'exited failed', rc: 1, signal: null });
      expect(exit).toMatchObject({ severity: 'failure', summary: 'dispatch_cli exited rc=1' });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.every((e) => e.severity === 'warning')).toBe(true);
      expect(lines.map((e) => e.summary).join('\n')).toMatch(error);
      await waitGone(pid, 'the tool');
    });

    it.each([
      ['a directory', () => tools],
      ['a missing file', () => path.join(tools, 'missing.js')],
    ])('%s: 500 naming the file, no job, no process, no event', async (_what, target) => {
      useTool(target());
      const before = (await get<{ bus: { lastEventId: string } }>('/api/system-status')).body.bus.lastEventId;
      const r = await post<{ detail: string }>('/api/proposals/generate', { project: 'relb', model: 'any' });
      expect(r.status).toBe(500);
      expect(r.body.detail).toBe(`dispatch tool not found: ${toolLink}`);
      const after = (await get<{ bus: { lastEventId: string }; jobs: unknown }>('/api/system-status')).body.bus.lastEventId;
      expect(after).toBe(before);
      expect(markedProcesses(svc.mark, [svc.pid])).toEqual([]);
    });
  });

  it('leaves no process and no descriptor behind (figures printed)', async () => {
    const fds = await waitFor(() => {
      const now = svc.fds();
      return now.total === baseline.total ? now : undefined;
    }, 'the descriptor count to return to its start').catch(() => svc.fds());
    const left = markedProcesses(svc.mark, [svc.pid]);
    const running = (await get<Job[]>('/api/jobs?state=running')).body;
    console.log(
      `tool-faults: ${jobsRun} jobs run (+2 refused), each in a final state with its exit event; processes of the jobs seen at most ${maxProcesses} at once, ${left.length} left; ` +
        `service descriptors before ${baseline.total} (pipes ${baseline.pipes}, sockets ${baseline.sockets}, TCP ${baseline.tcp}), after ${fds.total} (pipes ${fds.pipes}, sockets ${fds.sockets}, TCP ${fds.tcp}); service ran as ${ROOT ? 'root without CAP_DAC_OVERRIDE' : `uid ${process.getuid?.()}`}`,
    );
    expect(running).toEqual([]);
    expect(left).toEqual([]);
    expect(fds).toEqual(baseline);
  });
});
