import { spawn } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkStartupGuards, StartupGuardError, utcDate } from '../../src/ops/guards.js';
import { GENERATION_EXECUTOR, SHIPPED_REGISTRIES, type Registries } from '../../src/registry/index.js';
import { fixture, makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { freePort } from '../helpers/process.js';

const expired = { name: 'old_path', retireBy: '2026-01-31', description: '' };
const dead = { name: 'ReviewProposal', label: 'Review', executor: null };

describe('checkStartupGuards', () => {
  it('passes the shipped registry today and on every date up to each retire_by', () => {
    expect(() => checkStartupGuards(SHIPPED_REGISTRIES, utcDate())).not.toThrow();
    for (const f of SHIPPED_REGISTRIES.fallbacks) {
      if (f.retireBy !== null) expect(() => checkStartupGuards(SHIPPED_REGISTRIES, f.retireBy as string)).not.toThrow();
    }
  });

  it('registers exactly the two sanctioned fallbacks and the one GenerationProposal kind', () => {
    expect(SHIPPED_REGISTRIES.fallbacks.map((f) => f.name).sort()).toEqual(['proposal_id_not_pending', 'take_id_not_on_disk']);
    expect(SHIPPED_REGISTRIES.proposalKinds).toEqual([{ name: 'GenerationProposal', label: 'Generate', executor: GENERATION_EXECUTOR }]);
    expect(GENERATION_EXECUTOR.path).toBe('/api/proposals/generate');
  });

  it('fails the day after a retire_by, naming the fallback and its date', () => {
    const f = SHIPPED_REGISTRIES.fallbacks.find((x) => x.retireBy !== null);
    expect(f).toBeDefined();
    const next = new Date(`${f!.retireBy}T00:00:00Z`);
    next.setUTCDate(next.getUTCDate() + 1);
    expect(() => checkStartupGuards(SHIPPED_REGISTRIES, utcDate(next))).toThrow(`${f!.name} (retire_by ${f!.retireBy})`);
  });

  it('lists every expired fallback and every kind without executor', () => {
    const reg: Registries = {
      fallbacks: [expired, { ...expired, name: 'older_path', retireBy: '2025-05-05' }, { ...expired, name: 'kept', retireBy: null }],
      proposalKinds: [...SHIPPED_REGISTRIES.proposalKinds, dead, { ...dead, name: 'NoteProposal' }],
    };
    let err: unknown;
    try {
      checkStartupGuards(reg, '2026-11-21');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(StartupGuardError);
    const g = err as StartupGuardError;
    expect(g.message).toContain('old_path (retire_by 2026-01-31)');
    expect(g.message).toContain('older_path (retire_by 2025-05-05)');
    expect(g.message).not.toContain('kept');
    expect(g.message).toContain('ReviewProposal');
    expect(g.message).toContain('NoteProposal');
    expect(g.deadKinds).toEqual(['ReviewProposal', 'NoteProposal']);
    expect(g.expiredFallbacks.map((f) => f.name)).toEqual(['old_path', 'older_path']);
  });

  it('does not fail on the retire_by day itself', () => {
    expect(() => checkStartupGuards({ fallbacks: [expired], proposalKinds: [] }, '2026-01-31')).not.toThrow();
  });
});

describe('a failing guard stops start-up', () => {
  let t: TestService | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('startService rejects and opens nothing', async () => {
    const { tmp } = makeTempStore();
    await expect(startTestService({ tmp, registries: { fallbacks: [expired], proposalKinds: SHIPPED_REGISTRIES.proposalKinds }, today: '2026-11-21' })).rejects.toThrow(
      /old_path \(retire_by 2026-01-31\)/,
    );
    // The guards run before the state database is created.
    expect(fs.existsSync(path.join(tmp, 'state'))).toBe(false);
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('starts with the shipped registry on the injected date', async () => {
    t = await startTestService({ today: '2026-11-21' });
    const status = (await (await t.get('/api/system-status')).json()) as any;
    expect(status.guards.checkedOn).toBe('2026-11-21');
  });

  it.each([
    ['expired-fallback', /expired sanctioned fallbacks: legacy_path \(retire_by 2020-01-01\)/],
    ['dead-kind', /proposal kinds without executor: ReviewProposal/],
    ['both', /legacy_path \(retire_by 2020-01-01\).*ReviewProposal/],
  ])('the process with %s exits non-zero, prints the names and never listens', async (which, message) => {
    const port = await freePort();
    const { tmp, dataDir, stateDir } = makeTempStore();
    const child = spawn(process.execPath, [fixture('start-with-registries.mjs'), which], {
      env: { PATH: process.env.PATH, PORT: String(port), CONSOLE_DATA_DIR: dataDir, CONSOLE_STATE_DIR: stateDir, LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).not.toBe(0);
    expect(stderr).toMatch(message);
    // Nothing listens on the port: a connection is refused.
    await expect(connect(port)).rejects.toThrow(/ECONNREFUSED/);
    // Nor was the state database created: the guards run first.
    expect(fs.existsSync(path.join(stateDir, 'console-state.db'))).toBe(false);
    console.log(
      `guards: ${which}: exit ${code}, port ${port} refused connections, no state database; ${
        stderr
          .trim()
          .split('\n')
          .find((l) => /guard/i.test(l)) ?? stderr.trim()
      }`,
    );
    fs.rmSync(tmp, { recursive: true, force: true });
  });
});

function connect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => {
      sock.destroy();
      resolve();
    });
    sock.on('error', reject);
  });
}
