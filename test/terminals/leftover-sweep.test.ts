/**
 * A terminal's processes all end with it: its command leaves
 * processes that keep forking (test/fixtures/gen-forking-tree.mjs: a daemon in a session of
 * its own whose parent is gone, and a forker in the command's group), through the real server
 * on port 0 with test/fixtures/ttyd-standin.mjs as TTYD_BIN. Only the terminal's own mark
 * (`CONSOLE_TERMINAL_ID`) leads to the daemon: stop must sweep by it until none is left.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { readProc, treeProcesses } from '../../src/process/proc-scan.js';
import { allEvents, waitFor } from '../helpers/events.js';
import { fixture, startTestService, type TestService } from '../helpers/service.js';
import { killMarked } from '../process/helpers.js';

const A = 'harbor-lights';
let t: TestService | undefined;
let mark: string | undefined;
afterEach(async () => {
  // Whatever the outcome, nothing of the terminal outlives the test.
  if (mark !== undefined) await killMarked(mark);
  mark = undefined;
  await t?.close();
  t = undefined;
});

describe('stopping a terminal whose tree keeps forking', () => {
  it.each([
    ['stop', 'daemon'],
    ['stop', 'daemon+group'],
    ['shutdown', 'daemon+group'],
  ])('%s kills every process of its tree (%s)', async (how, model) => {
    const first = 20_000 + Math.floor(Math.random() * 500) * 20;
    t = await startTestService({
      env: {
        TTYD_BIN: fixture('ttyd-standin.mjs'),
        TTYD_COMMAND: JSON.stringify([process.execPath, fixture('gen-forking-tree.mjs'), '--model', model]),
        CONSOLE_TTYD_PORTS: `${first}-${first + 9}`,
        CONSOLE_TTYD_READY_MS: '60000',
        FORKING_TARGET: '100',
      },
    });
    // Every process of this service's terminals holds the service's mark.
    mark = `CONSOLE_TERMINAL_OF=${t.config.stateDbPath}`;
    const res = await t.post('/api/ttyd/start', { projectId: A });
    expect(res.status).toBe(201);
    const { pid, port } = (await res.json()) as { pid: number; port: number };
    const { childPid } = (await (await fetch(`http://127.0.0.1:${port}/info`)).json()) as { childPid: number };
    // The command exits once its daemon has started 100 children: the daemon's parent is gone.
    await waitFor(() => ([null, 'Z'].includes(readProc(childPid)?.state ?? null) ? true : undefined), 'the terminal’s command to exit');
    const before = treeProcesses(null, null, mark).length;
    expect(before).toBeGreaterThan(100);

    if (how === 'stop') {
      const stop = await t.post('/api/ttyd/stop', { projectId: A });
      expect(stop.status).toBe(200);
      expect(((await stop.json()) as { terminal: { state: string } }).terminal.state).toBe('stopped');
    } else {
      await t.stop();
    }
    expect(treeProcesses(null, null, mark).map((p) => p.pid)).toEqual([]);
    expect(treeProcesses(pid, null)).toEqual([]);
    console.log(`terminal ${how} (${model}): ${before} processes of its tree before, 0 after`);
    if (how === 'stop') {
      const evs = await allEvents(t.url, `scopePrefix=terminal/${A}`);
      expect(evs.map((e) => e.summary)).toEqual([`ttyd started pid=${pid} port=${port}`, expect.stringMatching(/^ttyd stopped rc=\d+$/)]);
    }
  });
});
