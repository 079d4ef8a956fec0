/**
 * `engine doctor` reads the store as the service does: named pipes,
 * links out of the store and files past the bounds are findings, never a hang, and no
 * finding quotes a file's contents.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeTempStore } from '../helpers/service.js';
import { SENTINEL } from '../helpers/hostile-files.js';
import { runCli } from './run-cli.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('engine doctor on hostile store files', () => {
  it('reports pipes, links out of the store, deep and big files and text as findings, quoting nothing', async () => {
    const s = makeTempStore('sample');
    dirs.push(s.tmp);
    const p = (...parts: string[]) => path.join(s.dataDir, 'projects', 'harbor-lights', ...parts);
    fs.rmSync(p('shots', 'sh010.json'));
    execFileSync('mkfifo', [p('shots', 'sh010.json')]);
    fs.rmSync(p('shots', 'sh020.json'));
    fs.symlinkSync('/etc/passwd', p('shots', 'sh020.json'));
    fs.writeFileSync(p('shots', 'sh030.json'), `{"shot_id":"sh030","x":${'['.repeat(1000)}${']'.repeat(1000)}}`);
    fs.writeFileSync(p('takes', 'tk_0001.json'), `{"take_id":"tk_0001","pad":"${'x'.repeat(5000)}"}`);
    fs.writeFileSync(p('takes', 'tk_0002.json'), `not json ${SENTINEL}`);
    fs.rmSync(path.join(s.dataDir, 'memory', 'style-palette.json'));
    execFileSync('mkfifo', [path.join(s.dataDir, 'memory', 'style-palette.json')]);

    const r = await runCli(['doctor', '--json'], { CONSOLE_DATA_DIR: s.dataDir, CONSOLE_STATE_DIR: s.stateDir, CONSOLE_STORE_FILE_MAX_BYTES: '4096' });
    expect(r.code, r.stderr).toBe(1);
    const report = r.json();
    const findings = [...report.projects.flatMap((x: any) => x.findings), ...report.memory.findings].map((f: any) => [f.file, f.field, f.problem]);
    const hl = 'projects/harbor-lights';
    expect(findings).toEqual(
      expect.arrayContaining([
        [`${hl}/shots/sh010.json`, 'shot_id', 'cannot be read (not a regular file (a named pipe))'],
        [`${hl}/shots/sh020.json`, 'shot_id', 'cannot be read (a symbolic link leading outside projects/harbor-lights)'],
        [`${hl}/shots/sh030.json`, 'shot_id', expect.stringMatching(/^cannot be read \(nested deeper than 64 levels at line 1 column \d+, CONSOLE_STORE_JSON_MAX_DEPTH\)$/)],
        [`${hl}/takes/tk_0001.json`, 'take_id', 'cannot be read (larger than 4096 bytes, CONSOLE_STORE_FILE_MAX_BYTES)'],
        [`${hl}/takes/tk_0002.json`, 'take_id', 'cannot be read (invalid JSON at line 1 column 1: invalid symbol)'],
        ['memory/style-palette.json', 'id', 'cannot be read (not a regular file (a named pipe))'],
      ]),
    );
    // The report names its store at the top (`store`); findings name files relative to it only.
    const said = JSON.stringify([report.projects, report.memory, report.store_findings]) + r.stderr;
    for (const bad of [SENTINEL, 'root:x:0:0', s.tmp]) expect(said).not.toContain(bad);
    expect(r.stdout).not.toContain(SENTINEL);
  });
});
