/**
 * The hardened systemd unit of the monitoring kit (deploy/systemd/console-backend.service),
 * checked with the real tool: `systemd-analyze verify` accepts it without a warning, and
 * `systemd-analyze security` rates its exposure "OK" (2.0 or less of 10). The unit names
 * /usr/bin/node and /opt/console-backend; the test gives it this machine's node and this
 * checkout (verify checks that ExecStart's program exists), nothing else. systemd-analyze is
 * Debian's `systemd` package, which .ci/run installs; a machine without it fails here, naming it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/service.js';
import { requireTool } from '../helpers/tools.js';

const UNIT = path.join(REPO_ROOT, 'deploy', 'systemd', 'console-backend.service');
/** The most exposure `systemd-analyze security` may give (its scale: 0 safe, 10 unsafe; "OK" up to 4.9). */
const MOST_EXPOSURE = 2.0;

let dir: string;
let unit: string;
let analyze: string;
beforeAll(() => {
  analyze = requireTool('systemd-analyze', 'the systemd unit is checked with systemd-analyze verify (Debian’s systemd package: apt-get install systemd; .ci/run installs it)');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-systemd-'));
  unit = path.join(dir, 'console-backend.service');
  const text = fs.readFileSync(UNIT, 'utf8');
  expect(text).toContain('ExecStart=/usr/bin/node /opt/console-backend/dist/main/index.js');
  fs.writeFileSync(unit, text.replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/console-backend', REPO_ROOT.replace(/\/$/, '')));
});
afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The unit's directives, `name` → values (a directive may repeat). */
function directives(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of fs.readFileSync(UNIT, 'utf8').split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line);
    if (m) out.set(m[1] as string, [...(out.get(m[1] as string) ?? []), m[2] as string]);
  }
  return out;
}

describe('the systemd unit', () => {
  it('passes systemd-analyze verify without a warning', () => {
    const r = spawnSync(analyze, ['verify', unit], { encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr.split('\n').filter((l) => l.includes('console-backend.service'))).toEqual([]);
  });

  it('is hardened: systemd-analyze security rates it OK, at most 2.0', () => {
    const r = spawnSync(analyze, ['security', '--offline=true', unit], { encoding: 'utf8', timeout: 60_000 });
    const m = /Overall exposure level for console-backend\.service: (\d+(?:\.\d+)?) (\S+)/.exec(r.stdout);
    expect(m, r.stdout + r.stderr).not.toBeNull();
    expect(Number(m?.[1]), r.stdout).toBeLessThanOrEqual(MOST_EXPOSURE);
  });

  it('stops the service with SIGTERM, which ends the jobs itself, and keeps what the service needs', () => {
    const d = directives();
    expect(d.get('KillMode')).toEqual(['mixed']);
    expect(d.get('KillSignal')).toEqual(['SIGTERM']);
    for (const name of ['NoNewPrivileges', 'ProtectHome', 'PrivateTmp', 'PrivateDevices', 'ProtectKernelTunables', 'ProtectControlGroups', 'RestrictSUIDSGID', 'LockPersonality'])
      expect(d.get(name), name).toEqual(['yes']);
    expect(d.get('ProtectSystem')).toEqual(['strict']);
    expect(d.get('CapabilityBoundingSet')).toEqual(['']);
    // The jobs' CPU priority is lowered with setpriority: @resources must stay allowed.
    expect((d.get('SystemCallFilter') ?? []).join(' ')).not.toMatch(/~.*@resources/);
    // V8 writes the machine code it runs.
    expect(d.has('MemoryDenyWriteExecute')).toBe(false);
    expect(d.get('Environment')).toEqual(expect.arrayContaining(['CONSOLE_STATE_DIR=/var/lib/console-backend']));
    // The allocator as bin/console-backend (npm start) chooses it: jemalloc preloaded, glibc's arenas bounded
    // without it, and none of the three handed to jobs and terminals (CONSOLE_LAUNCHER_SET).
    const launcher = fs.readFileSync(path.join(REPO_ROOT, 'bin', 'console-backend'), 'utf8');
    const conf = /MALLOC_CONF=(\S+)/.exec(launcher)?.[1];
    expect(d.get('Environment')).toEqual(
      expect.arrayContaining(['LD_PRELOAD=libjemalloc.so.2', `MALLOC_CONF=${conf}`, 'MALLOC_ARENA_MAX=2', '"CONSOLE_LAUNCHER_SET=LD_PRELOAD MALLOC_CONF MALLOC_ARENA_MAX"']),
    );
    expect(d.get('StateDirectory')).toEqual(['console-backend']);
  });
});
