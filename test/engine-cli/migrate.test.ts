/**
 * `engine migrate`: converts the bundled legacy project (and a format-1 project.json project)
 * to format 2, keeps the legacy files under legacy/, is idempotent and resumable, refuses a
 * format-2 project and legacy data it cannot map, and writes nothing on --dry-run. The real
 * service then lists and serves the project.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SAMPLE_STORE, makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { changedFiles, readJsonFile, runCli, snapshot } from './run-cli.js';

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

const OLD = path.join(SAMPLE_STORE, 'projects', 'old-pilot');

async function json(route: string): Promise<{ status: number; body: any }> {
  const res = await t!.get(route);
  return { status: res.status, body: await res.json() };
}

describe('engine migrate old-pilot', () => {
  it('converts it to format 2, keeps the legacy files, and the service lists and serves it', async () => {
    const s = store();
    const dir = path.join(s.dataDir, 'projects', 'old-pilot');
    const before = snapshot(s.dataDir);
    const r = await runCli(['migrate', '--project', 'old-pilot'], s.env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('migrated old-pilot to format 2');

    expect(readJsonFile(path.join(dir, 'project.json'))).toEqual({ format: 2, id: 'old-pilot', title: 'Old Pilot', created_at: '2024-03-11' });
    expect(readJsonFile(path.join(dir, 'shots', 'sh001.json'))).toEqual({
      shot_id: 'sh001',
      episode: 1,
      beat_id: 'scene-1',
      description: 'Test pilot opening, exported by the format-1 engine.',
    });
    // Nothing deleted: the legacy files moved to legacy/, byte for byte; nothing outside the project changed.
    expect(fs.readFileSync(path.join(dir, 'legacy', 'project.yaml'))).toEqual(fs.readFileSync(path.join(OLD, 'project.yaml')));
    expect(fs.readFileSync(path.join(dir, 'legacy', 'shots', 'sh001.yaml'))).toEqual(fs.readFileSync(path.join(OLD, 'shots', 'sh001.yaml')));
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([
      'projects/old-pilot/legacy/project.yaml',
      'projects/old-pilot/legacy/shots/sh001.yaml',
      'projects/old-pilot/project.json',
      'projects/old-pilot/project.yaml',
      'projects/old-pilot/shots/sh001.json',
      'projects/old-pilot/shots/sh001.yaml',
    ]);
    expect(fs.existsSync(path.join(dir, 'project.yaml'))).toBe(false);

    const doctor = await runCli(['doctor'], s.env);
    expect(doctor.code).toBe(0);
    expect(doctor.stdout).toMatch(/^result: healthy/m);

    t = await startTestService({ tmp: s.tmp });
    const list = await json('/api/projects');
    expect(list.body.map((p: any) => p.id)).toEqual(['harbor-lights', 'night-market', 'old-pilot']);
    expect(await json('/api/projects/old-pilot')).toMatchObject({ status: 200, body: { format: 2, title: 'Old Pilot' } });
    const episodes = await json('/api/projects/old-pilot/episodes');
    expect(episodes.status).toBe(200);
    expect(episodes.body.map((e: any) => [e.id, e.synthesized])).toEqual([['1', true]]);
    const beats = await json('/api/projects/old-pilot/episodes/1/scenes/main/beats');
    expect(beats.body.map((b: any) => [b.id, b.shot_ids])).toEqual([['scene-1', ['sh001']]]);
  });

  it('is idempotent: a second run changes nothing and exits 0', async () => {
    const s = store();
    expect((await runCli(['migrate', '--project', 'old-pilot'], s.env)).code).toBe(0);
    const before = snapshot(s.dataDir);
    const again = await runCli(['migrate', '--project', 'old-pilot', '--json'], s.env);
    expect(again.code).toBe(0);
    expect(again.json()).toMatchObject({ outcome: 'already_migrated', state: 'migrated', steps: [], problems: [] });
    const human = await runCli(['migrate', '--project', 'old-pilot'], s.env);
    expect(human.code).toBe(0);
    expect(human.stdout).toContain('old-pilot is already migrated to format 2');
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });

  it('writes nothing with --dry-run and prints the plan', async () => {
    const s = store();
    const before = snapshot(s.dataDir);
    const r = await runCli(['migrate', '--project', 'old-pilot', '--dry-run'], s.env);
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')).toEqual(
      expect.arrayContaining([
        'migrate projects/old-pilot: legacy project format: format 1 (project.yaml)',
        '  copy    project.yaml → legacy/project.yaml',
        expect.stringMatching(/^ {2}write {3}shots\/sh001\.json from shots\/sh001\.yaml: shot → shot_id; episode 1 .*; scene 1 → beat_id "scene-1"$/),
        '  write   project.json from project.yaml: format 2; created → created_at',
        '  remove  shots/sh001.yaml (kept as legacy/shots/sh001.yaml)',
        'dry run: nothing written',
      ]),
    );
    const plan = await runCli(['migrate', '--project', 'old-pilot', '--dry-run', '--json'], s.env);
    expect(plan.code).toBe(0);
    expect(plan.json()).toMatchObject({ outcome: 'planned', state: 'legacy', reason: 'format 1 (project.yaml)', problems: [] });
    expect(plan.json().steps).toContainEqual(expect.objectContaining({ action: 'write', file: 'project.json', doc: { format: 2, id: 'old-pilot', title: 'Old Pilot', created_at: '2024-03-11' } }));
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });

  it('refuses a format-2 project and writes nothing (exit 1)', async () => {
    const s = store();
    const before = snapshot(s.dataDir);
    const r = await runCli(['migrate', '--project', 'harbor-lights'], s.env);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('already format 2');
    expect(r.stdout).toContain('refused: nothing written');
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });

  it('refuses legacy data it cannot map, naming the file and member, and writes nothing', async () => {
    const s = store();
    fs.writeFileSync(path.join(s.dataDir, 'projects', 'old-pilot', 'shots', 'sh002.yaml'), 'shot: sh002\ndescription: no scene\n');
    const before = snapshot(s.dataDir);
    const r = await runCli(['migrate', '--project', 'old-pilot'], s.env);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('problem shots/sh002.yaml: no "scene" (or "beat_id")');
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });
});

describe('engine migrate, other legacy shapes', () => {
  it('migrates a format-1 project.json with legacy shot and take names, and the service serves its lineage', async () => {
    const s = store();
    const dir = path.join(s.dataDir, 'projects', 'older');
    fs.mkdirSync(path.join(dir, 'shots'), { recursive: true });
    fs.mkdirSync(path.join(dir, 'takes'));
    fs.mkdirSync(path.join(dir, 'media'));
    fs.writeFileSync(path.join(dir, 'project.json'), JSON.stringify({ format: 1, name: 'The Older Show', logline: 'kept' }));
    fs.writeFileSync(path.join(dir, 'shots', 'opening.json'), JSON.stringify({ shot: 'sh1', scene: 2, order: 1 }));
    fs.writeFileSync(path.join(dir, 'takes', 'first.yaml'), 'take: tk_1\nshot: sh1\ncreated: "2024-01-01T10:00:00Z"\nmedia: media/tk_1.svg\n');
    fs.writeFileSync(path.join(dir, 'takes', 'tk_2.yml'), 'shot: sh1\nparent: tk_1\ncreated: "2024-01-02T10:00:00Z"\n');
    fs.writeFileSync(path.join(dir, 'media', 'tk_1.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');

    const r = await runCli(['migrate', '--project', 'older'], s.env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(readJsonFile(path.join(dir, 'project.json'))).toEqual({ format: 2, id: 'older', title: 'The Older Show', logline: 'kept' });
    expect(readJsonFile(path.join(dir, 'shots', 'sh1.json'))).toEqual({ shot_id: 'sh1', episode: 1, beat_id: 'scene-2', order: 1 });
    expect(readJsonFile(path.join(dir, 'takes', 'tk_1.json'))).toEqual({
      take_id: 'tk_1',
      shot_id: 'sh1',
      created_at: '2024-01-01T10:00:00Z',
      media: 'media/tk_1.svg',
    });
    expect(readJsonFile(path.join(dir, 'takes', 'tk_2.json'))).toEqual({
      take_id: 'tk_2',
      shot_id: 'sh1',
      parent_take_id: 'tk_1',
      created_at: '2024-01-02T10:00:00Z',
    });
    const files = [...snapshot(dir).keys()].sort();
    expect(files).toEqual([
      'legacy/project.json',
      'legacy/shots/opening.json',
      'legacy/takes/first.yaml',
      'legacy/takes/tk_2.yml',
      'media/tk_1.svg',
      'project.json',
      'shots/sh1.json',
      'takes/tk_1.json',
      'takes/tk_2.json',
    ]);
    expect(readJsonFile(path.join(dir, 'legacy', 'project.json'))).toEqual({ format: 1, name: 'The Older Show', logline: 'kept' });

    t = await startTestService({ tmp: s.tmp });
    const lineage = await json('/api/beats/scene-2/lineage?projectId=older');
    expect(lineage.status).toBe(200);
    expect(lineage.body.edges.map((e: any) => `${e.from}>${e.to}`)).toEqual(expect.arrayContaining(['beat:scene-2>shot:sh1', 'shot:sh1>take:tk_1', 'take:tk_1>take:tk_2']));
  });

  it('resumes a run that stopped after copying the legacy files', async () => {
    const s = store();
    const dir = path.join(s.dataDir, 'projects', 'old-pilot');
    // State of a run stopped between steps 2 and 3: copies made, a new shot file half there.
    fs.mkdirSync(path.join(dir, 'legacy', 'shots'), { recursive: true });
    fs.copyFileSync(path.join(dir, 'shots', 'sh001.yaml'), path.join(dir, 'legacy', 'shots', 'sh001.yaml'));
    fs.copyFileSync(path.join(dir, 'project.yaml'), path.join(dir, 'legacy', 'project.yaml'));
    fs.writeFileSync(path.join(dir, 'shots', 'sh001.json'), '{"shot_id": "sh0');
    const r = await runCli(['migrate', '--project', 'old-pilot'], s.env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain('resuming a run that stopped');
    expect(readJsonFile(path.join(dir, 'shots', 'sh001.json'))).toMatchObject({ shot_id: 'sh001', episode: 1, beat_id: 'scene-1' });
    expect([...snapshot(dir).keys()].sort()).toEqual(['legacy/project.yaml', 'legacy/shots/sh001.yaml', 'project.json', 'shots/sh001.json']);
  });

  it('finishes a run that stopped before removing the legacy files, and keeps one edited since', async () => {
    const s = store();
    const dir = path.join(s.dataDir, 'projects', 'old-pilot');
    expect((await runCli(['migrate', '--project', 'old-pilot'], s.env)).code).toBe(0);
    fs.copyFileSync(path.join(OLD, 'project.yaml'), path.join(dir, 'project.yaml'));
    fs.writeFileSync(path.join(dir, 'shots', 'sh001.yaml'), 'shot: sh001\nscene: 1\ndescription: edited since\n');
    const r = await runCli(['migrate', '--project', 'old-pilot'], s.env);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('  remove  project.yaml (kept as legacy/project.yaml)');
    expect(fs.existsSync(path.join(dir, 'project.yaml'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'shots', 'sh001.yaml'), 'utf8')).toContain('edited since');
  });
});
