/**
 * `engine doctor --fix`: repairs what can be derived (format, ids from file and directory names,
 * a placeholder title), names the rest, writes atomically and nothing else; afterwards the real
 * service answers 200 where it answered 422.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { allEvents } from '../helpers/events.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';
import { changedFiles, editJson, readJsonFile, runCli, runFixCli, snapshot } from './run-cli.js';

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

/** The warning events of memory entries left out of `GET /api/memory`. */
async function skippedMemory() {
  return (await allEvents(t!.url, 'scopePrefix=engine/memory')).filter((e) => e.summary.startsWith('memory entry skipped: '));
}

async function status(route: string): Promise<{ status: number; body: any }> {
  const res = await t!.get(route);
  return { status: res.status, body: await res.json() };
}

describe('engine doctor --fix', () => {
  it("repairs a project through the 422's own fix_cli, and the service then answers 200", async () => {
    const s = store();
    const pj = path.join(s.dataDir, 'projects', 'night-market', 'project.json');
    editJson(pj, (d) => {
      delete d.format;
      delete d.title;
      d.id = 'night-market-old';
    });
    const memory = path.join(s.dataDir, 'memory', 'handheld-only.json'); // project_id night-market
    editJson(memory, (d) => delete d.id);

    t = await startTestService({ tmp: s.tmp });
    const project = await status('/api/projects/night-market');
    expect(project.status).toBe(422);
    expect(project.body.detail.fix_cli).toBe('npm run engine -- doctor --project night-market --fix');
    // The entry is left out of the list, and its warning event carries the fix.
    const mem = await status('/api/memory');
    expect(mem.status).toBe(200);
    expect(mem.body.map((m: any) => m.id)).not.toContain('handheld-only');
    expect((await skippedMemory()).map((e) => e.payload)).toEqual([
      { file: 'memory/handheld-only.json', field: 'id', project_id: 'night-market', fix_cli: 'npm run engine -- doctor --project night-market --fix' },
    ]);
    await t.stop();

    const before = snapshot(s.dataDir);
    const r = await runFixCli(`${project.body.detail.fix_cli} --json`, s.env);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.json().fixed).toEqual([
      { file: 'projects/night-market/project.json', field: 'format', to: 2, placeholder: false },
      { file: 'projects/night-market/project.json', field: 'id', from: 'night-market-old', to: 'night-market', placeholder: false },
      { file: 'projects/night-market/project.json', field: 'title', to: 'Night Market', placeholder: true },
      { file: 'memory/handheld-only.json', field: 'id', to: 'handheld-only', placeholder: false },
    ]);
    expect(r.json()).toMatchObject({ errors: 0, warnings: 0, healthy: true });
    // Only the two repaired files changed, no temp file is left, and the rest of each file is kept.
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual(['memory/handheld-only.json', 'projects/night-market/project.json']);
    const fixed = readJsonFile(pj);
    expect(Object.keys(fixed).slice(0, 3)).toEqual(['format', 'id', 'title']);
    expect(fixed).toMatchObject({ format: 2, id: 'night-market', title: 'Night Market', created_at: '2026-10-08T16:30:00Z' });
    expect(fixed.logline).toMatch(/^A street-food vendor/);

    t = await startTestService({ tmp: s.tmp });
    const after = await status('/api/projects/night-market');
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ format: 2, id: 'night-market', title: 'Night Market' });
    expect((await status('/api/projects/night-market/episodes')).status).toBe(200);
    const entries = await status('/api/memory');
    expect(entries.status).toBe(200);
    expect(entries.body.map((m: any) => m.id).sort()).toEqual(['handheld-only', 'mara-wardrobe', 'style-palette']);
  });

  it('repairs shot and take ids store-wide, says what it changed, and names what must be set by hand', async () => {
    const s = store();
    const p = (...x: string[]) => path.join(s.dataDir, 'projects', 'harbor-lights', ...x);
    editJson(p('shots', 'sh010.json'), (d) => delete d.shot_id);
    editJson(p('takes', 'tk_0003.json'), (d) => (d.take_id = 'tk_0033'));
    editJson(path.join(s.dataDir, 'memory', 'style-palette.json'), (d) => delete d.id); // project_id null
    // sh140: a derivable id and an episode that only a person can know.
    editJson(p('shots', 'sh140.json'), (d) => {
      d.shot_id = 'sh14';
      delete d.episode;
    });
    const sh140Before = fs.readFileSync(p('shots', 'sh140.json'));

    t = await startTestService({ tmp: s.tmp });
    expect((await status('/api/projects/harbor-lights/episodes')).status).toBe(422);
    expect((await status('/api/memory')).status).toBe(200);
    expect((await skippedMemory()).map((e) => e.payload.fix_cli)).toEqual(['npm run engine -- doctor --fix']);
    await t.stop();

    const before = snapshot(s.dataDir);
    const r = await runCli(['doctor', '--fix'], s.env);
    expect(r.code).toBe(1); // sh140's episode and old-pilot's format remain
    expect(r.stdout).toContain('fixed projects/harbor-lights/shots/sh010.json: set "shot_id" to "sh010"');
    expect(r.stdout).toContain('fixed projects/harbor-lights/takes/tk_0003.json: changed "take_id" from "tk_0033" to "tk_0003"');
    expect(r.stdout).toContain('fixed projects/harbor-lights/shots/sh140.json: changed "shot_id" from "sh14" to "sh140"');
    expect(r.stdout).toContain('fixed memory/style-palette.json: set "id" to "style-palette"');
    expect(r.stdout).toContain('set "episode" by hand in projects/harbor-lights/shots/sh140.json');
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([
      'memory/style-palette.json',
      'projects/harbor-lights/shots/sh010.json',
      'projects/harbor-lights/shots/sh140.json',
      'projects/harbor-lights/takes/tk_0003.json',
    ]);
    expect(readJsonFile(p('shots', 'sh140.json'))).toEqual({ ...JSON.parse(sh140Before.toString()), shot_id: 'sh140' });

    const left = await runCli(['doctor', '--json'], s.env);
    const findings = left.json().projects.flatMap((x: any) => x.findings);
    expect(findings.map((f: any) => [f.file, f.field])).toEqual([
      ['projects/harbor-lights/shots/sh140.json', 'episode'],
      ['projects/old-pilot/project.yaml', null],
    ]);

    // Setting the one field by hand, as told, makes the project whole.
    editJson(p('shots', 'sh140.json'), (d) => (d.episode = 2));
    t = await startTestService({ tmp: s.tmp });
    const episodes = await status('/api/projects/harbor-lights/episodes');
    expect(episodes.status).toBe(200);
    expect(episodes.body.map((e: any) => e.id)).toEqual(['1', '2']);
    expect((await status('/api/memory')).status).toBe(200);
  });

  it('leaves a file it cannot repair as it is', async () => {
    const s = store();
    const shot = path.join(s.dataDir, 'projects', 'harbor-lights', 'shots', 'sh020.json');
    editJson(shot, (d) => delete d.beat_id);
    fs.writeFileSync(path.join(s.dataDir, 'projects', 'harbor-lights', 'takes', 'tk_0002.json'), '[1, 2]');
    const before = snapshot(s.dataDir);
    const r = await runCli(['doctor', '--project', 'harbor-lights', '--fix'], s.env);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('fixed: nothing that can be derived');
    expect(r.stdout).toContain('set "beat_id" by hand in projects/harbor-lights/shots/sh020.json');
    expect(r.stdout).toContain('repair projects/harbor-lights/takes/tk_0002.json by hand');
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });

  it('does not set format when a project.yaml lies beside a project.json without one', async () => {
    const s = store();
    const dir = path.join(s.dataDir, 'projects', 'night-market');
    editJson(path.join(dir, 'project.json'), (d) => delete d.format);
    fs.writeFileSync(path.join(dir, 'project.yaml'), 'id: night-market\n');
    const before = snapshot(s.dataDir);
    const r = await runCli(['doctor', '--project', 'night-market', '--fix', '--json'], s.env);
    expect(r.code).toBe(1);
    expect(r.json().fixed).toEqual([]);
    expect(r.json().projects[0].findings[0]).toMatchObject({ field: 'format', derived: null, fix: expect.stringContaining('set "format" by hand') });
    expect(changedFiles(before, snapshot(s.dataDir))).toEqual([]);
  });
});
