/**
 * Terminals left by a service killed with SIGKILL (no orphan survives): the next start on the same state folder kills them, marked by
 * `CONSOLE_TERMINAL_OF=<state database path>`; another service's terminals are left alone.
 * The compiled service runs as a separate process; ttyd is the stand-in.
 */
import fs from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { allEvents, waitFor } from '../helpers/events.js';
import { fixture, makeTempStore } from '../helpers/service.js';
import { isGone, requireBuild, startServiceProcess, type ServiceProcess } from '../fixtures/rel-c-harness.js';

const COMMAND = [process.execPath, fixture('forever.mjs')];
const cleanups: (() => unknown)[] = [];
const temps: string[] = [];

beforeAll(() => requireBuild());
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
  for (const tmp of temps.splice(0)) fs.rmSync(tmp, { recursive: true, force: true });
});

/** A service process with terminals on ports of its own; its store and state in a new temp folder. */
async function service(store = makeTempStore()): Promise<{ svc: ServiceProcess; store: ReturnType<typeof makeTempStore> }> {
  temps.push(store.tmp);
  const first = 30_000 + Math.floor(Math.random() * 500) * 20;
  const svc = await startServiceProcess(
    store,
    { TTYD_BIN: fixture('ttyd-standin.mjs'), TTYD_COMMAND: JSON.stringify(COMMAND), CONSOLE_TTYD_PORTS: `${first}-${first + 9}`, CONSOLE_TTYD_READY_MS: '60000' },
    (fn) => cleanups.push(fn),
  );
  return { svc, store };
}

/** Starts the project's terminal and its command (the stand-in runs it once a client comes): both pids. */
async function terminal(svc: ServiceProcess, projectId: string): Promise<number[]> {
  const res = await fetch(`${svc.url}/api/ttyd/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ projectId }) });
  expect(res.status).toBe(201);
  const { pid, port } = (await res.json()) as { pid: number; port: number };
  const info = (await (await fetch(`http://127.0.0.1:${port}/info`)).json()) as { childPid: number };
  const pids = [pid, info.childPid];
  cleanups.push(() => {
    for (const p of pids) if (!isGone(p)) process.kill(p, 'SIGKILL');
  });
  return pids;
}

describe('terminals of a service killed with SIGKILL', () => {
  it('are killed by the next start on the same state folder, with an event; another service’s terminals live on', async () => {
    const { svc, store } = await service();
    const mine = [...(await terminal(svc, 'harbor-lights')), ...(await terminal(svc, 'night-market'))];
    const other = await service();
    const theirs = await terminal(other.svc, 'harbor-lights');

    svc.child.kill('SIGKILL');
    await svc.exited;
    // Nothing stops them: the terminals and their commands outlive the service.
    expect(mine.filter(isGone)).toEqual([]);

    const again = await service(store);
    await waitFor(() => (mine.every(isGone) ? true : undefined), 'the leftover terminals to be killed');
    expect(theirs.filter(isGone)).toEqual([]);
    const events = await allEvents(again.svc.url, 'scopePrefix=terminal');
    const killed = events.filter((e) => e.summary.startsWith('ttyd leftovers killed'));
    expect(killed).toHaveLength(1);
    expect(killed[0]).toMatchObject({ severity: 'warning', scope: 'terminal', payload: { killed: mine.length } });
    // The ports are free again: the new run starts the project's terminal.
    await terminal(again.svc, 'harbor-lights');
    console.log(`terminals: SIGKILL left ${mine.length} terminal processes running; the next start killed ${killed[0]!.payload.killed}; another service's ${theirs.length} lived on`);
  });
});
