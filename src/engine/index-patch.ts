/** Incremental re-synthesis: a worker's index patched from the changed shot and take files to what a full read builds. */
import fs from 'node:fs';
import path from 'node:path';
import {
  beatOrder,
  firstProblem,
  isEntityFileName,
  parsedOf,
  parseShot,
  parseTake,
  shotOrder,
  takeOrder,
  type BeatOfEpisode,
  type MutableProjectIndex,
  type Parsed,
  type Shot,
  type Take,
} from './project-index.js';
import { readStoreJsonSync, type StoreAccess } from './read-store-file.js';

/** An entity file of a project: its folder and file name. */
export interface EntityFile {
  readonly folder: 'shots' | 'takes';
  readonly name: string;
}

/** Patches `index` from the entity `files` to what a full read gives. @returns the number of store files read. */
export function patchProjectIndex(access: StoreAccess, index: MutableProjectIndex, files: readonly EntityFile[]): number {
  if (index.status.kind !== 'ok') return 0;
  const id = index.status.id;
  const within = `projects/${id}`;
  const seen = new Set<string>();
  const touched = new Map<number, Set<string>>();
  let read = 0;
  for (const f of files) {
    const key = `${f.folder}/${f.name}`;
    // A folder that could not be listed had no file read; its own change is a whole change.
    if (seen.has(key) || !isEntityFileName(f.name) || index.folderProblems[f.folder] !== null) continue;
    seen.add(key);
    const doc = readEntityFile(access, `${within}/${key}`, within);
    read++;
    if (f.folder === 'takes') patchTake(index, id, f.name, doc);
    else patchShot(index, id, f.name, doc, touched);
  }
  for (const [episode, beats] of touched) rebuildEpisode(index, episode, beats);
  index.invalid = firstProblem(index);
  return read;
}

/** The file's parse, or null when gone; a dangling link is a problem, as a full read finds it. */
function readEntityFile(access: StoreAccess, rel: string, within: string): Parsed | null {
  const read = readStoreJsonSync(access, rel, within);
  if (read.kind === 'absent' && !listed(path.join(access.root, rel))) return null;
  return parsedOf(read);
}

function listed(abs: string): boolean {
  try {
    return fs.lstatSync(abs, { throwIfNoEntry: false }) !== undefined;
  } catch {
    return false; // ENOTDIR, EACCES: not in the listing either
  }
}

function patchTake(index: MutableProjectIndex, id: string, name: string, doc: Parsed | null): void {
  const old = index.takeFiles.get(name);
  if (old !== undefined) {
    index.takeFiles.delete(name);
    if ('error' in old) index.takeErrors.delete(name);
    else {
      const list = index.takesByShot.get(old.shot_id) as Take[];
      list.splice(list.indexOf(old), 1);
      if (list.length === 0) index.takesByShot.delete(old.shot_id);
      index.takes.delete(old.take_id);
      index.takeCount--;
    }
  }
  if (doc === null) return;
  const t = parseTake(id, name, doc);
  index.takeFiles.set(name, t);
  if ('error' in t) {
    index.takeErrors.set(name, t.error);
    return;
  }
  insertSorted(index.takesByShot, t.shot_id, t, takeOrder);
  index.takes.set(t.take_id, t);
  index.takeCount++;
}

function patchShot(index: MutableProjectIndex, id: string, name: string, doc: Parsed | null, touched: Map<number, Set<string>>): void {
  const touch = (s: Shot) => {
    let beats = touched.get(s.episode);
    if (!beats) touched.set(s.episode, (beats = new Set()));
    beats.add(s.beat_id);
  };
  const old = index.shotFiles.get(name);
  if (old !== undefined) {
    index.shotFiles.delete(name);
    if ('error' in old) index.shotErrors.delete(name);
    else {
      const list = index.shotsByBeat.get(old.beat_id) as Shot[];
      list.splice(list.indexOf(old), 1);
      if (list.length === 0) index.shotsByBeat.delete(old.beat_id);
      index.shotCount--;
      touch(old);
    }
  }
  if (doc === null) return;
  const s = parseShot(id, name, doc);
  index.shotFiles.set(name, s);
  if ('error' in s) {
    index.shotErrors.set(name, s.error);
    return;
  }
  insertSorted(index.shotsByBeat, s.beat_id, s, shotOrder);
  index.shotCount++;
  touch(s);
}

function rebuildEpisode(index: MutableProjectIndex, episode: number, touchedBeats: ReadonlySet<string>): void {
  const key = String(episode);
  const current = index.episodes.get(key);
  const beats: BeatOfEpisode[] = (current?.beats ?? []).filter((b) => !touchedBeats.has(b.id));
  for (const beatId of touchedBeats) {
    const shots = (index.shotsByBeat.get(beatId) ?? []).filter((s) => s.episode === episode);
    if (shots.length > 0) beats.push({ id: beatId, episode, order: (shots[0] as Shot).order, shots });
  }
  beats.sort(beatOrder);
  if (beats.length > 0 && current) {
    current.beats = beats;
    return;
  }
  if (beats.length > 0) index.episodes.set(key, { number: episode, beats });
  else index.episodes.delete(key);
  if (!current && beats.length > 0) {
    // A new episode: the map is kept in ascending episode number, as a full read builds it.
    const sorted = [...index.episodes.values()].sort((a, b) => a.number - b.number);
    index.episodes.clear();
    for (const e of sorted) index.episodes.set(String(e.number), e);
  }
}

function insertSorted<V>(m: Map<string, V[]>, k: string, v: V, order: (a: V, b: V) => number): void {
  const list = m.get(k);
  if (!list) {
    m.set(k, [v]);
    return;
  }
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (order(list[mid] as V, v) < 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, v);
}
