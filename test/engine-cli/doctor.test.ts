/**
 * `engine doctor` (without --fix) against temp copies of the sample store: what it reports,
 * that it agrees with the service's own 410/422 answers, its exit codes, and that it writes nothing.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents } from '../helpers/events.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { changedFiles, editJson, runCli, snapshot } from './run-cli.js';

const temps: string[] = [];
let t: TestService | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
  for (const d of temps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function store() {
  const s = makeTempStore('sample');
  temps.push(s.tmp);
  return { ...s, env: { CONSOLE_DATA_DIR: s.dataDir, CONSOLE_STATE_DIR: s.stateDir } };
}

const findingsOf = (report: any) => [...report.projects.flatMap((p: any) => p.findings), ...report.memory.findings, ...report.store_findings];

describe('engine doctor on the sample store', () => {
  it('reports the legacy project only, with the migrate command, and exits 1', async () => {
    const s = store();
    const r = await runCli(['doctor', '--json'], s.env);
    expect(r.code).toBe(1);
    const report = r.json();
    expect(report).toMatchObject({ store: s.dataDir, project: null, errors: 1, warnings: 0, healthy: false });
    expect(report.projects.map((p: any) => [p.id, p.status])).toEqual([
      ['harbor-lights', 'ok'],
      ['night-market', 'ok'],
      ['old-pilot', 'legacy'],
    ]);
    expect(findingsOf(report)).toEqual([
      {
        severity: 'error',
        code: 'legacy_format',
        project_id: 'old-pilot',
        file: 'projects/old-pilot/project.yaml',
        entity: 'project',
        field: null,
        problem: 'legacy project format: format 1 (project.yaml)',
        fix: 'npm run engine -- migrate --project old-pilot',
        derived: null,
      },
    ]);
    expect(report.memory.files).toBe(3);

    const human = await runCli(['doctor'], s.env);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('old-pilot: legacy');
    expect(human.stdout).toContain('legacy project format: format 1 (project.yaml)');
    expect(human.stdout).toContain('fix: npm run engine -- migrate --project old-pilot');
    expect(human.stdout).toMatch(/^harbor-lights: ok/m);
    expect(human.stdout).toMatch(/^result: 1 error, 0 warnings/m);
    expect(human.stdout.match(/^ {2}error/gm)).toHaveLength(1);

    // The service answers 410 with exactly the doctor's text.
    t = await startTestService({ tmp: s.tmp });
    const res = await t.get('/api/projects/old-pilot');
    expect(res.status).toBe(410);
    expect(await res.json()).toEqual({ detail: 'legacy project format: format 1 (project.yaml)', code: 'legacy_project' });
  });

  it('exits 0 for a healthy project given with --project, and checks only its memory entries', async () => {
    const s = store();
    const r = await runCli(['doctor', '--project', 'harbor-lights', '--json'], s.env);
    expect(r.code).toBe(0);
    const report = r.json();
    expect(report).toMatchObject({ project: 'harbor-lights', errors: 0, warnings: 0, healthy: true });
    expect(report.projects.map((p: any) => p.id)).toEqual(['harbor-lights']);
    expect(report.memory.files).toBe(1); // mara-wardrobe is the one entry of harbor-lights
    const human = await runCli(['doctor', '--project', 'harbor-lights'], s.env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^result: healthy \(1 project and 1 memory entry\)$/m);
  });
});

describe('engine doctor on broken files', () => {
  /** Breaks one file of each kind; returns the store. */
  function broken() {
    const s = store();
    const p = (...x: string[]) => path.join(s.dataDir, 'projects', ...x);
    editJson(p('night-market', 'project.json'), (d) => {
      delete d.format;
      delete d.title;
    });
    editJson(p('harbor-lights', 'shots', 'sh140.json'), (d) => {
      delete d.episode;
      d.shot_id = 'sh999';
      d.beat_id = 'bad..beat';
    });
    fs.writeFileSync(p('harbor-lights', 'shots', 'sh150.json'), '{ not json');
    editJson(p('harbor-lights', 'takes', 'tk_0003.json'), (d) => {
      delete d.take_id;
      d.parent_take_id = 'tk_9999';
    });
    editJson(p('harbor-lights', 'takes', 'tk_0004.json'), (d) => delete d.shot_id);
    editJson(p('harbor-lights', 'takes', 'tk_0005.json'), (d) => (d.shot_id = 'sh777'));
    fs.rmSync(p('harbor-lights', 'media', 'tk_0006.svg'));
    editJson(p('harbor-lights', 'takes', 'tk_0007.json'), (d) => (d.media = '../../../etc/passwd'));
    editJson(path.join(s.dataDir, 'memory', 'style-palette.json'), (d) => {
      delete d.id;
      delete d.text;
    });
    editJson(path.join(s.dataDir, 'memory', 'mara-wardrobe.json'), (d) => (d.id = 'other'));
    // A format-1 project.json is legacy too; a directory the service cannot address is ignored.
    fs.mkdirSync(p('older'));
    fs.writeFileSync(p('older', 'project.json'), JSON.stringify({ format: 1, id: 'older', title: 'Older' }));
    fs.mkdirSync(p('bad name'));
    fs.writeFileSync(p('bad name', 'project.json'), JSON.stringify({ format: 2, id: 'bad name', title: 'Bad' }));
    return s;
  }

  it('reports every missing or mismatched canonical field with file, field and what is wrong', async () => {
    const s = broken();
    const before = snapshot(s.dataDir);
    const r = await runCli(['doctor', '--json'], s.env);
    expect(r.code).toBe(1);
    const found = findingsOf(r.json()).map((f: any) => [f.severity, f.code, f.file, f.field, f.problem, f.derived?.value ?? null]);
    const hl = 'projects/harbor-lights';
    expect(found).toEqual(
      expect.arrayContaining([
        ['error', 'missing_canonical_field', 'projects/night-market/project.json', 'format', 'is missing', 2],
        ['error', 'missing_canonical_field', 'projects/night-market/project.json', 'title', 'is missing', 'Night Market'],
        ['error', 'missing_canonical_field', `${hl}/shots/sh140.json`, 'shot_id', 'does not match the file name "sh140"', 'sh140'],
        ['error', 'missing_canonical_field', `${hl}/shots/sh140.json`, 'episode', 'is missing', null],
        ['error', 'missing_canonical_field', `${hl}/shots/sh140.json`, 'beat_id', 'is not a valid identifier', null],
        ['error', 'missing_canonical_field', `${hl}/shots/sh150.json`, 'shot_id', expect.stringMatching(/^cannot be read/), null],
        ['error', 'missing_canonical_field', `${hl}/takes/tk_0003.json`, 'take_id', 'is missing', 'tk_0003'],
        ['error', 'missing_canonical_field', `${hl}/takes/tk_0004.json`, 'shot_id', 'is missing', null],
        ['error', 'missing_canonical_field', 'memory/style-palette.json', 'id', 'is missing', 'style-palette'],
        ['error', 'missing_canonical_field', 'memory/style-palette.json', 'text', 'is missing', null],
        ['error', 'missing_canonical_field', 'memory/mara-wardrobe.json', 'id', 'does not match the file name "mara-wardrobe"', 'mara-wardrobe'],
        ['error', 'legacy_format', 'projects/older/project.json', 'format', 'legacy project format: format 1', null],
        ['warning', 'unknown_parent_take', `${hl}/takes/tk_0003.json`, 'parent_take_id', expect.stringContaining('"tk_9999"'), null],
        ['warning', 'unknown_shot', `${hl}/takes/tk_0005.json`, 'shot_id', expect.stringContaining('"sh777"'), null],
        ['warning', 'missing_media', `${hl}/takes/tk_0006.json`, 'media', expect.stringContaining('"media/tk_0006.svg"'), null],
        ['warning', 'media_outside_project', `${hl}/takes/tk_0007.json`, 'media', expect.stringContaining('outside'), null],
        ['warning', 'ignored_directory', 'projects/bad name', null, expect.stringContaining('not a valid project id'), null],
      ]),
    );
    expect(found).toHaveLength(18); // the above, plus old-pilot's legacy format
    expect(r.json()).toMatchObject({ errors: 13, warnings: 5 });
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);

    // Human-readable: what to set by hand, in which file.
    const human = await runCli(['doctor'], s.env);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain(`set "episode" by hand in ${hl}/shots/sh140.json`);
    expect(human.stdout).toContain('set "text" by hand in memory/style-palette.json');
    expect(human.stdout).toContain(`  error   ${hl}/takes/tk_0004.json: "shot_id" is missing`);
    expect(human.stdout).toContain('fix: npm run engine -- doctor --project night-market --fix (sets it to "Night Market", a placeholder');
    expect(human.stdout).toMatch(/^result: 13 errors, 5 warnings/m);
    // Invalid JSON: where, and to fix the syntax.
    expect(human.stdout).toContain(`  error   ${hl}/shots/sh150.json: "shot_id" cannot be read (invalid JSON at line 1 column 3: invalid symbol)`);
    expect(human.stdout).toContain(`fix: repair ${hl}/shots/sh150.json by hand: fix the JSON syntax`);
  });

  it('says when a canonical member has the wrong type, and what it must be', async () => {
    const s = store();
    const p = (...x: string[]) => path.join(s.dataDir, 'projects', ...x);
    editJson(p('night-market', 'project.json'), (d) => (d.format = '2'));
    editJson(p('harbor-lights', 'takes', 'tk_0003.json'), (d) => (d.take_id = 3));
    const r = await runCli(['doctor', '--json'], s.env);
    const found = findingsOf(r.json()).map((f: any) => [f.file, f.field, f.problem, f.fix]);
    expect(found).toEqual(
      expect.arrayContaining([
        ['projects/night-market/project.json', 'format', 'has the wrong type (a string, expected an integer)', 'set "format" by hand in projects/night-market/project.json: the integer 2'],
        [
          'projects/harbor-lights/takes/tk_0003.json',
          'take_id',
          'has the wrong type (an integer, expected a non-empty string)',
          'npm run engine -- doctor --project harbor-lights --fix (sets it to "tk_0003")',
        ],
      ]),
    );
  });

  it('agrees with the service: each 422 the service answers is among the findings', async () => {
    const s = broken();
    const r = await runCli(['doctor', '--json'], s.env);
    const found = findingsOf(r.json());
    t = await startTestService({ tmp: s.tmp });
    for (const route of ['/api/projects/night-market', '/api/projects/harbor-lights/episodes']) {
      const res = await t.get(route);
      expect(res.status, route).toBe(422);
      const { detail } = (await res.json()) as any;
      const file = / in (\S+); add it/.exec(detail.remediation)?.[1];
      expect(
        found.some((f: any) => f.file === file && f.field === detail.field),
        `${route}: ${detail.remediation}`,
      ).toBe(true);
      expect(detail.fix_cli).toBe(detail.project_id === null ? 'npm run engine -- doctor --fix' : `npm run engine -- doctor --project ${detail.project_id} --fix`);
    }
    expect((await t.get('/api/projects/older')).status).toBe(410);
    // Memory entries that cannot be used are left out of the list, each named by a warning
    // event: each is among the findings.
    const memory = await t.get('/api/memory');
    expect(memory.status).toBe(200);
    await memory.body?.cancel();
    const skipped = (await allEvents(t.url, 'scopePrefix=engine/memory')).filter((e) => e.summary.startsWith('memory entry skipped: '));
    expect(skipped.map((e) => e.payload.file).sort()).toEqual(['memory/mara-wardrobe.json', 'memory/style-palette.json']);
    for (const e of skipped) {
      const p = e.payload as { file: string; field: string; project_id: string | null; fix_cli: string };
      expect(
        found.some((f: any) => f.file === p.file && f.field === p.field),
        `${p.file}: ${e.detail}`,
      ).toBe(true);
      expect(p.fix_cli).toBe(p.project_id === null ? 'npm run engine -- doctor --fix' : `npm run engine -- doctor --project ${p.project_id} --fix`);
    }
  });

  it('limits the report to one project with --project', async () => {
    const s = broken();
    const r = await runCli(['doctor', '--project', 'night-market', '--json'], s.env);
    expect(r.code).toBe(1);
    const files = new Set(findingsOf(r.json()).map((f: any) => f.file));
    expect([...files]).toEqual(['projects/night-market/project.json']);
  });

  it('counts warnings as problems only with --strict', async () => {
    const s = store();
    fs.rmSync(path.join(s.dataDir, 'projects', 'night-market', 'media', 'tk_0001.svg'));
    const plain = await runCli(['doctor', '--project', 'night-market'], s.env);
    expect(plain.code).toBe(0);
    expect(plain.stdout).toContain('"media" names a file that does not exist: "media/tk_0001.svg"');
    expect(plain.stdout).toMatch(/^result: 0 errors, 1 warning/m);
    const strict = await runCli(['doctor', '--project', 'night-market', '--strict', '--json'], s.env);
    expect(strict.code).toBe(1);
    expect(strict.json()).toMatchObject({ errors: 0, warnings: 1, healthy: false });
  });
});
