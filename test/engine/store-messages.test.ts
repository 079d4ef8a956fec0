/**
 * The store's messages, through the real server on a temp store: invalid
 * JSON says where and to fix the syntax (never "missing … add it"); a canonical member of the
 * wrong type says so (`"format": "2"` was reported as missing); one bad memory entry file is
 * left out of `GET /api/memory` with a warning event, as a broken project is left out of the
 * project list, never failing the whole list.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitCeilingMs } from '../helpers/ceilings.js';
import { allEvents } from '../helpers/events.js';
import { makeTempStore, startTestService, type TestService } from '../helpers/service.js';

let t: TestService;

/** Copies harbor-lights to a project `id` (its own id in project.json), then lets `edit` break it. */
function project(dataDir: string, id: string, edit: (dir: string) => void): void {
  const dir = path.join(dataDir, 'projects', id);
  fs.cpSync(path.join(dataDir, 'projects', 'harbor-lights'), dir, { recursive: true });
  const pj = path.join(dir, 'project.json');
  fs.writeFileSync(pj, JSON.stringify({ ...JSON.parse(fs.readFileSync(pj, 'utf8')), id }, null, 2));
  edit(dir);
}

function editJson(file: string, edit: (doc: Record<string, unknown>) => void): void {
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
  edit(doc);
  fs.writeFileSync(file, JSON.stringify(doc, null, 2));
}

beforeAll(async () => {
  const store = makeTempStore('sample');
  project(store.dataDir, 'bad-json', (dir) => fs.writeFileSync(path.join(dir, 'project.json'), '{\n  "format": 2,\n  "id": "bad-json",\n  "title": "Bad" "JSON"\n}\n'));
  project(store.dataDir, 'format-string', (dir) => editJson(path.join(dir, 'project.json'), (d) => (d.format = '2')));
  project(store.dataDir, 'episode-string', (dir) => editJson(path.join(dir, 'shots', 'sh020.json'), (d) => (d.episode = '1')));
  fs.writeFileSync(path.join(store.dataDir, 'memory', 'zz-broken.json'), '{ "id": "zz-broken", "text": "no end"\n');
  fs.writeFileSync(path.join(store.dataDir, 'memory', 'zz-typed.json'), JSON.stringify({ id: 'zz-typed', text: 5 }));
  t = await startTestService({ tmp: store.tmp });
});
afterAll(async () => {
  await t?.close();
});

async function detailOf(p: string): Promise<{ status: number; remediation: string; field: string }> {
  const res = await t.get(p);
  const body = (await res.json()) as { detail: { remediation: string; field: string } };
  return { status: res.status, remediation: body.detail.remediation, field: body.detail.field };
}

describe('the messages of store files that cannot be used', () => {
  it('invalid JSON: where it is wrong, and to fix the syntax', async () => {
    const d = await detailOf('/api/projects/bad-json');
    expect(d.status).toBe(422);
    expect(d.remediation).toBe('Canonical field "format" cannot be read (invalid JSON at line 4 column 18: comma expected) in projects/bad-json/project.json; fix the JSON syntax and reload.');
    expect(d.remediation).not.toMatch(/missing|add it/);
  });

  it('a canonical member of the wrong type says so, and what it must be', async () => {
    const format = await detailOf('/api/projects/format-string');
    expect(format).toEqual({
      status: 422,
      field: 'format',
      remediation: 'Canonical field "format" has the wrong type (a string, expected an integer) in projects/format-string/project.json; make it an integer (see engine-format.md) and reload.',
    });
    const episode = await detailOf('/api/projects/episode-string/episodes');
    expect(episode).toEqual({
      status: 422,
      field: 'episode',
      remediation:
        'Canonical field "episode" has the wrong type (a string, expected an integer ≥ 0) in projects/episode-string/shots/sh020.json; make it an integer ≥ 0 (see engine-format.md) and reload.',
    });
    // The project list leaves it out, with a warning that says the same.
    const listed = ((await (await t.get('/api/projects')).json()) as { id: string }[]).map((p) => p.id);
    expect(listed).not.toContain('format-string');
    const warnings = await allEvents(t.url, 'scopePrefix=engine/projects');
    expect(warnings.map((e) => e.summary)).toContain('project skipped: format-string (canonical field format has the wrong type (a string, expected an integer))');
  });
});

describe('GET /api/memory with bad entry files', () => {
  it('lists the good entries and reports each bad one once by a warning event', async () => {
    const res = await t.get('/api/memory');
    expect(res.status).toBe(200);
    const ids = ((await res.json()) as { id: string }[]).map((m) => m.id);
    expect(ids).toEqual(['handheld-only', 'mara-wardrobe', 'style-palette']);

    const again = await t.get('/api/memory');
    expect(again.status).toBe(200);
    await again.body?.cancel();
    const events = await allEvents(t.url, 'scopePrefix=engine/memory');
    expect(events.map((e) => [e.severity, e.summary, e.detail, e.payload])).toEqual([
      [
        'warning',
        'memory entry skipped: memory/zz-broken.json (canonical field id cannot be read (invalid JSON at line 2 column 1: close brace expected))',
        'Canonical field "id" cannot be read (invalid JSON at line 2 column 1: close brace expected) in memory/zz-broken.json; fix the JSON syntax and reload.',
        { file: 'memory/zz-broken.json', field: 'id', project_id: null, fix_cli: 'npm run engine -- doctor --fix' },
      ],
      [
        'warning',
        'memory entry skipped: memory/zz-typed.json (canonical field text has the wrong type (an integer, expected a string))',
        'Canonical field "text" has the wrong type (an integer, expected a string) in memory/zz-typed.json; make it a string (see engine-format.md) and reload.',
        { file: 'memory/zz-typed.json', field: 'text', project_id: null, fix_cli: 'npm run engine -- doctor --fix' },
      ],
    ]);

    // Repaired, it is listed again; broken anew, it is reported anew.
    fs.writeFileSync(path.join(t.dataDir, 'memory', 'zz-typed.json'), JSON.stringify({ id: 'zz-typed', text: 'five' }));
    const fixed = await waitForMemory((list) => list.includes('zz-typed'));
    expect(fixed).toEqual(['handheld-only', 'mara-wardrobe', 'style-palette', 'zz-typed']);
    fs.writeFileSync(path.join(t.dataDir, 'memory', 'zz-typed.json'), JSON.stringify({ id: 'zz-typed' }));
    await waitForMemory((list) => !list.includes('zz-typed'));
    const after = (await allEvents(t.url, 'scopePrefix=engine/memory')).map((e) => e.summary);
    expect(after.slice(2)).toEqual(['memory entry skipped: memory/zz-typed.json (missing canonical field text)']);
  });
});

/** Polls `GET /api/memory` until its ids satisfy `ok` (the store watcher sees the edit; the ceiling is a safety net). */
async function waitForMemory(ok: (ids: string[]) => boolean): Promise<string[]> {
  const until = Date.now() + waitCeilingMs();
  for (;;) {
    const ids = ((await (await t.get('/api/memory')).json()) as { id: string }[]).map((m) => m.id);
    if (ok(ids)) return ids;
    if (Date.now() > until) throw new Error(`GET /api/memory stayed ${JSON.stringify(ids)}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
