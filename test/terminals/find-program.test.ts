/**
 * Resolving TTYD_BIN: a path is checked as is; a bare name is looked up on PATH like execvp,
 * skipping non-executable files, folders and empty PATH entries.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { TerminalProgramMissingError } from '../../src/terminals/index.js';
import { findProgram } from '../../src/terminals/find-program.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'console-find-'));
  dirs.push(d);
  return d;
}
function file(dir: string, name: string, mode: number): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, '#!/bin/sh\n');
  fs.chmodSync(p, mode);
  return p;
}

describe('findProgram', () => {
  it('returns the first executable file of that name on PATH', () => {
    const [a, b, c] = [tmp(), tmp(), tmp()];
    file(a, 'ttyd', 0o644); // not executable: skipped
    fs.mkdirSync(path.join(b, 'ttyd')); // a folder: skipped
    const good = file(c, 'ttyd', 0o755);
    expect(findProgram('ttyd', ['', a, b, c].join(path.delimiter))).toBe(good);
  });

  it('never looks in the current folder through an empty PATH entry', () => {
    const d = tmp();
    file(d, 'ttyd', 0o755);
    const cwd = process.cwd();
    process.chdir(d);
    try {
      expect(() => findProgram('ttyd', `${path.delimiter}`)).toThrow(TerminalProgramMissingError);
    } finally {
      process.chdir(cwd);
    }
  });

  it('checks a path as given', () => {
    const d = tmp();
    const exe = file(d, 'x', 0o755);
    expect(findProgram(exe, '')).toBe(exe);
    expect(() => findProgram(file(d, 'y', 0o600), '/usr/bin')).toThrow(`terminal program ${path.join(d, 'y')} is not executable (TTYD_BIN)`);
    expect(() => findProgram(d, '')).toThrow(`terminal program ${d} is not a file (TTYD_BIN)`);
    expect(() => findProgram(path.join(d, 'none'), '')).toThrow(/does not exist/);
  });

  it('names the program and the remedy when it is not on PATH', () => {
    expect(() => findProgram('ttyd', tmp())).toThrow('terminal program "ttyd" not found on PATH; install ttyd or set TTYD_BIN to the program\'s path');
    expect(() => findProgram('ttyd', undefined)).toThrow(TerminalProgramMissingError);
  });
});
