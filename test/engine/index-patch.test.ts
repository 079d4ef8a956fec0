/**
 * Incremental re-synthesis (src/engine/index-patch.ts): after any sequence of
 * changes to shot and take files (added, rewritten, moved to another shot, beat or episode,
 * made invalid, removed, a folder or a dangling link where a file was), an index patched by
 * re-reading only the changed files gives exactly the answers of a full read of the project,
 * and reads only those files.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { patchProjectIndex, type EntityFile } from '../../src/engine/index-patch.js';
import { loadProjectIndex, type MutableProjectIndex } from '../../src/engine/project-index.js';
import { storeAccess, type StoreAccess } from '../../src/engine/read-store-file.js';
import { synthesize, type SynthesisQuery } from '../../src/engine/synthesize.js';

const P = 'patched';
let root: string;
let access: StoreAccess;
const dir = (folder: string) => path.join(root, 'projects', P, folder);

beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'index-patch-'));
  fs.mkdirSync(dir('shots'), { recursive: true });
  fs.mkdirSync(dir('takes'), { recursive: true });
  fs.writeFileSync(path.join(root, 'projects', P, 'project.json'), JSON.stringify({ format: 2, id: P, title: 'Patched' }));
  access = storeAccess(root, { fileMaxBytes: 1 << 20, jsonMaxDepth: 64 });
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

const SHOTS = ['s1', 's2', 's3', 's4', 's5', 's6'];
const TAKES = ['t1', 't2', 't3', 't4', 't5', 't6', 't7', 't8'];
const BEATS = ['b1', 'b2', 'b3'];

/** One change to one file of the project. */
type Op =
  | { kind: 'shot'; name: string; episode: number; beat: string; order: number | null; extra: number }
  | { kind: 'take'; name: string; shot: string; parent: string | null; created: number }
  | { kind: 'bad'; folder: 'shots' | 'takes'; name: string; how: 'json' | 'field' | 'folder' | 'dangling' }
  | { kind: 'remove'; folder: 'shots' | 'takes'; name: string };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('shot' as const),
      name: fc.constantFrom(...SHOTS),
      episode: fc.integer({ min: 0, max: 3 }),
      beat: fc.constantFrom(...BEATS),
      order: fc.option(fc.integer({ min: 0, max: 5 })),
      extra: fc.nat(9),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('take' as const),
      name: fc.constantFrom(...TAKES),
      shot: fc.constantFrom(...SHOTS, 'nowhere'),
      parent: fc.option(fc.constantFrom(...TAKES)),
      created: fc.integer({ min: 0, max: 4 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('bad' as const),
      folder: fc.constantFrom('shots' as const, 'takes' as const),
      name: fc.constantFrom(...SHOTS.slice(0, 2), ...TAKES.slice(0, 2)),
      how: fc.constantFrom('json' as const, 'field' as const, 'folder' as const, 'dangling' as const),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), folder: fc.constantFrom('shots' as const, 'takes' as const), name: fc.constantFrom(...SHOTS, ...TAKES) }) },
);

/** Applies `o` to the store; returns the file it changed. */
function apply(o: Op): EntityFile {
  const folder = o.kind === 'shot' ? 'shots' : o.kind === 'take' ? 'takes' : o.folder;
  const name = `${o.name}.json`;
  const file = path.join(dir(folder), name);
  fs.rmSync(file, { recursive: true, force: true });
  if (o.kind === 'shot') {
    fs.writeFileSync(file, JSON.stringify({ shot_id: o.name, episode: o.episode, beat_id: o.beat, ...(o.order === null ? {} : { order: o.order }), note: o.extra }));
  } else if (o.kind === 'take') {
    fs.writeFileSync(file, JSON.stringify({ take_id: o.name, shot_id: o.shot, parent_take_id: o.parent, created_at: `2026-01-0${o.created + 1}T00:00:00Z` }));
  } else if (o.kind === 'bad') {
    if (o.how === 'json') fs.writeFileSync(file, '{ "shot_id": ');
    else if (o.how === 'field') fs.writeFileSync(file, JSON.stringify({ note: 'no id' }));
    else if (o.how === 'folder') fs.mkdirSync(file);
    else fs.symlinkSync(path.join(root, 'missing.json'), file);
  }
  return { folder, name };
}

/** Every answer of the project: episodes, scenes and beats of each episode, takes and lineage of each beat. */
function answers(index: MutableProjectIndex): Record<string, string> {
  const queries: SynthesisQuery[] = [{ kind: 'episodes' }];
  for (const e of ['0', '1', '2', '3']) queries.push({ kind: 'scenes', episodeId: e }, { kind: 'beats', episodeId: e, sceneId: 'main' });
  for (const b of BEATS) {
    queries.push({ kind: 'takes', beatId: b }, { kind: 'lineage', beatId: b, takeId: null });
    for (const t of TAKES) queries.push({ kind: 'lineage', beatId: b, takeId: t });
  }
  const out: Record<string, string> = {};
  for (const q of queries) {
    const r = synthesize(index, q, { t2: { primary: true, circled: false, rejected: false } });
    out[JSON.stringify(q)] = r.ok ? Buffer.from(r.body).toString() : JSON.stringify(r.error);
  }
  return out;
}

it('a patched index answers exactly as a full read, after any changes, reading only the changed files', () => {
  fc.assert(
    fc.property(fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 6 }), (batches) => {
      for (const f of ['shots', 'takes']) for (const e of fs.readdirSync(dir(f))) fs.rmSync(path.join(dir(f), e), { recursive: true, force: true });
      const index = loadProjectIndex(access, P);
      for (const batch of batches) {
        const changed = batch.map(apply);
        const read = patchProjectIndex(access, index, changed);
        expect(read).toBe(new Set(changed.map((c) => `${c.folder}/${c.name}`)).size);
        let fullReads = 0;
        const full = loadProjectIndex(access, P, () => fullReads++);
        expect(answers(index)).toEqual(answers(full));
        expect(index.invalid).toEqual(full.invalid);
        expect([index.shotCount, index.takeCount]).toEqual([full.shotCount, full.takeCount]);
        expect(fullReads).toBe(1 + full.shotFiles.size + full.takeFiles.size);
      }
    }),
    { numRuns: 150 },
  );
});
