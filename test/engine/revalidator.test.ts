/**
 * Revalidation of a shared store folder (src/engine/revalidator.ts; cluster.md: remote writes
 * raise no notifications): each look reports what changed since the last one, by the folders'
 * versions. Driven pass by pass on a real folder, no timer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { StoreRevalidator } from '../../src/engine/revalidator.js';
import type { StoreChange } from '../../src/engine/watcher.js';
import { SAMPLE_STORE } from '../helpers/service.js';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'revalidate-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** Writes `file` as the dispatch tool does: a new file renamed over the old one. */
function replace(file: string, text: string): void {
  fs.writeFileSync(`${file}.tmp`, text);
  fs.renameSync(`${file}.tmp`, file);
}

it('reports nothing at its first look, then each kind of change once', async () => {
  const root = path.join(tmp, 'store');
  fs.cpSync(SAMPLE_STORE, root, { recursive: true });
  const seen: StoreChange[] = [];
  const r = new StoreRevalidator(root, 60_000, (c) => seen.push(c));
  await r.pass();
  expect(seen).toEqual([]);
  await r.pass();
  expect(seen).toEqual([]);

  const project = 'harbor-lights';
  const takes = path.join(root, 'projects', project, 'takes');
  const [take] = fs.readdirSync(takes);
  replace(path.join(takes, take as string), fs.readFileSync(path.join(takes, take as string), 'utf8'));
  await r.pass();
  expect(seen).toEqual([{ kind: 'project', projectId: project }]);

  seen.length = 0;
  replace(path.join(root, 'projects', project, 'project.json'), fs.readFileSync(path.join(root, 'projects', project, 'project.json'), 'utf8'));
  fs.mkdirSync(path.join(root, 'projects', 'new-one'));
  fs.mkdirSync(path.join(root, 'memory'), { recursive: true });
  replace(path.join(root, 'memory', 'mem_new.json'), '{}');
  await r.pass();
  expect(seen).toEqual(expect.arrayContaining([{ kind: 'projects' }, { kind: 'memory' }, { kind: 'project', projectId: project }]));
  // A new project is reported too: its folders are seen for the first time.
  expect(seen.filter((c) => c.kind === 'project' && c.projectId === 'new-one')).toEqual([{ kind: 'project', projectId: 'new-one' }]);

  seen.length = 0;
  await r.pass();
  expect(seen).toEqual([]);
  expect(r.count).toBe(5);
});
