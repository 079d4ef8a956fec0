/**
 * The engine CLI's command line and store resolution: usage errors exit 2, help exits 0, and
 * without CONSOLE_DATA_DIR it uses the service's default store, found through readConfig.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { readConfig } from '../../src/config/config.js';
import { REPO_ROOT, makeTempStore } from '../helpers/service.js';
import { changedFiles, runCli, snapshot } from './run-cli.js';

const temps: string[] = [];
afterEach(() => {
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function store() {
  const s = makeTempStore('sample');
  temps.push(s.tmp);
  return { ...s, env: { CONSOLE_DATA_DIR: s.dataDir, CONSOLE_STATE_DIR: s.stateDir } };
}

describe('engine CLI usage', () => {
  it('exits 2 with a message and the usage for a bad command line, and writes nothing', async () => {
    const s = store();
    const before = snapshot(s.dataDir);
    const cases: [string[], RegExp][] = [
      [[], /missing command/],
      [['repair'], /unknown command "repair"/],
      [['doctor', '--bogus'], /--bogus/],
      [['doctor', 'extra'], /extra/],
      [['doctor', '--project'], /--project/],
      [['migrate'], /migrate needs --project/],
      [['doctor', '--project', '../etc'], /invalid project "\.\.\/etc"/],
      [['migrate', '--project', 'a..b'], /invalid project "a\.\.b"/],
      [['doctor', '--project', 'nobody'], /no project "nobody"/],
      [['migrate', '--project', 'nobody', '--dry-run'], /no project "nobody"/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(args, s.env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).toContain('usage: npm run engine -- <command> [options]');
      expect(r.stdout).toBe('');
    }
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });

  it('prints the usage on stdout and exits 0 for help', async () => {
    for (const args of [['help'], ['--help'], ['doctor', '--help'], ['migrate', '-h']]) {
      const r = await runCli(args, {});
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('doctor [--project <id>] [--fix] [--strict] [--json]');
      expect(r.stdout).toContain('migrate --project <id> [--dry-run] [--json]');
    }
  });

  it('exits 2 for a bad configuration variable or a store that does not exist', async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-cli-'));
    temps.push(tmp);
    const bad = await runCli(['doctor'], { CONSOLE_DATA_DIR: tmp, PORT: 'eighty' });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/PORT: expected an integer/);
    const missing = await runCli(['doctor'], { CONSOLE_DATA_DIR: path.join(tmp, 'nowhere') });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain(`engine store not found: ${path.join(tmp, 'nowhere')}`);
  });

  it("uses the service's default store without CONSOLE_DATA_DIR, seeding it as the service does", async () => {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'engine-cli-'));
    temps.push(tmp);
    const env = { CONSOLE_STATE_DIR: path.join(tmp, 'state') };
    const expected = readConfig(env).dataDir;
    expect(expected).toBe(path.join(tmp, 'state', 'sample-store'));
    const r = await runCli(['doctor', '--json'], env);
    expect(r.code).toBe(1); // the bundled sample's legacy project
    expect(r.json().store).toBe(expected);
    expect(r.stderr).toContain(`copied the bundled sample store to ${expected}`);
    expect(fs.existsSync(path.join(expected, 'projects', 'old-pilot', 'project.yaml'))).toBe(true);
    // Once it exists it is used as it is (no second copy).
    const again = await runCli(['doctor', '--json'], env);
    expect(again.stderr).toBe('');
    expect(again.json().store).toBe(expected);
  });

  it('is what `npm run engine` runs (the command named by fix_cli)', () => {
    const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    expect(pkg.scripts.engine).toBe('node dist/engine-cli/cli.js');
    expect(pkg.scripts.preengine).toBe('npm run build');
  });
});
