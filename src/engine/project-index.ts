/** One project's shots and takes as an index (engine-format.md), read in the synthesis workers, where synchronous reads hold no event loop. */
import { fieldProblem, missingField, unreadableField, type MissingCanonicalFieldDetail } from './errors.js';
import { isValidId } from './ids.js';
import { readProjectStatusSync, type ProjectStatus } from './project-file.js';
import { listStoreDirSync, readFolderEntryJsonSync, readStoreJsonSync, type StoreAccess, type StoreFolder } from './read-store-file.js';
import type { StoreFileProblem, StoreRead } from './store-read.js';

export interface Shot {
  readonly shot_id: string;
  readonly episode: number;
  readonly beat_id: string;
  /** `order` of the file, or +Infinity when absent (sorted last). */
  readonly order: number;
  readonly raw: Readonly<Record<string, unknown>>;
}

export interface Take {
  readonly take_id: string;
  readonly shot_id: string;
  readonly parent_take_id: string | null;
  readonly created_at: string;
  readonly raw: Readonly<Record<string, unknown>>;
}

/** One beat of one episode: its shots in `order`. */
export interface BeatOfEpisode {
  readonly id: string;
  readonly episode: number;
  readonly order: number;
  readonly shots: readonly Shot[];
}

export interface EpisodeOfProject {
  readonly number: number;
  /** Beats ordered by the smallest `order` of their shots, then id. */
  readonly beats: readonly BeatOfEpisode[];
}

export interface ProjectIndex {
  readonly status: ProjectStatus;
  /** Set when a shot or take lacks a canonical field: every entity route answers 422. */
  readonly invalid: MissingCanonicalFieldDetail | null;
  /** By decimal episode id, ascending by number. */
  readonly episodes: ReadonlyMap<string, EpisodeOfProject>;
  /** Every shot of a beat id across the project, in order. */
  readonly shotsByBeat: ReadonlyMap<string, readonly Shot[]>;
  /** Takes of each shot, oldest first (created_at, then take_id). */
  readonly takesByShot: ReadonlyMap<string, readonly Take[]>;
  readonly takes: ReadonlyMap<string, Take>;
  readonly shotCount: number;
  readonly takeCount: number;
}

/** A shot or take file's outcome: the entity, or its first problem. */
export type EntityOutcome<T> = T | { readonly error: MissingCanonicalFieldDetail };

/** The index as a worker keeps it for patching (index-patch.ts): derived maps plus each entity file's outcome and folder problems. */
export interface MutableProjectIndex extends ProjectIndex {
  invalid: MissingCanonicalFieldDetail | null;
  readonly episodes: Map<string, { readonly number: number; beats: BeatOfEpisode[] }>;
  readonly shotsByBeat: Map<string, Shot[]>;
  readonly takesByShot: Map<string, Take[]>;
  readonly takes: Map<string, Take>;
  shotCount: number;
  takeCount: number;
  /** Problems of `shots/` and `takes/` themselves (not a folder, a link out…). */
  readonly folderProblems: { shots: MissingCanonicalFieldDetail | null; takes: MissingCanonicalFieldDetail | null };
  /** Every listed shot and take file's outcome, by file name. */
  readonly shotFiles: Map<string, EntityOutcome<Shot>>;
  readonly takeFiles: Map<string, EntityOutcome<Take>>;
  /** The files of those whose outcome is a problem, by file name. */
  readonly shotErrors: Map<string, MissingCanonicalFieldDetail>;
  readonly takeErrors: Map<string, MissingCanonicalFieldDetail>;
}

/** Reads project `id`, calling `onRead` per file read; store problems go to `status` and `invalid`, never thrown. */
export function loadProjectIndex(access: StoreAccess, id: string, onRead: () => void = () => {}): MutableProjectIndex {
  const status = readProjectStatusSync(access, id);
  onRead();
  const index: MutableProjectIndex = {
    status,
    invalid: null,
    episodes: new Map(),
    shotsByBeat: new Map(),
    takesByShot: new Map(),
    takes: new Map(),
    shotCount: 0,
    takeCount: 0,
    folderProblems: { shots: null, takes: null },
    shotFiles: new Map(),
    takeFiles: new Map(),
    shotErrors: new Map(),
    takeErrors: new Map(),
  };
  if (status.kind !== 'ok') return index;
  const within = `projects/${id}`;
  const shots: Shot[] = [];
  const takes: Take[] = [];

  const shotFiles = listEntityFiles(access, `${within}/shots`, within);
  if (shotFiles.kind === 'problem') index.folderProblems.shots = unreadableField(id, 'shot_id', `${within}/shots`, shotFiles.problem);
  const shotFolder = shotFiles.kind === 'ok' ? shotFiles.value : null;
  for (const file of shotFolder?.entries ?? []) {
    const r = parseShot(id, file.name, parsedOf(readFolderEntryJsonSync(access, shotFolder as StoreFolder, file)));
    onRead();
    index.shotFiles.set(file.name, r);
    if ('error' in r) index.shotErrors.set(file.name, r.error);
    else shots.push(r);
  }
  const takeFiles = listEntityFiles(access, `${within}/takes`, within);
  if (takeFiles.kind === 'problem') index.folderProblems.takes = unreadableField(id, 'take_id', `${within}/takes`, takeFiles.problem);
  const takeFolder = takeFiles.kind === 'ok' ? takeFiles.value : null;
  for (const file of takeFolder?.entries ?? []) {
    const r = parseTake(id, file.name, parsedOf(readFolderEntryJsonSync(access, takeFolder as StoreFolder, file)));
    onRead();
    index.takeFiles.set(file.name, r);
    if ('error' in r) index.takeErrors.set(file.name, r.error);
    else takes.push(r);
  }

  shots.sort(shotOrder);
  const byEpisode = new Map<number, Map<string, Shot[]>>();
  for (const s of shots) {
    push(index.shotsByBeat, s.beat_id, s);
    let beats = byEpisode.get(s.episode);
    if (!beats) byEpisode.set(s.episode, (beats = new Map()));
    push(beats, s.beat_id, s);
  }
  for (const number of [...byEpisode.keys()].sort((a, b) => a - b)) {
    const beats = [...(byEpisode.get(number) as Map<string, Shot[]>)].map(([beatId, list]) => ({ id: beatId, episode: number, order: (list[0] as Shot).order, shots: list })).sort(beatOrder);
    index.episodes.set(String(number), { number, beats });
  }

  takes.sort(takeOrder);
  for (const t of takes) {
    push(index.takesByShot, t.shot_id, t);
    index.takes.set(t.take_id, t);
  }
  index.shotCount = shots.length;
  index.takeCount = takes.length;
  index.invalid = firstProblem(index);
  return index;
}

/** Shots in `order` (absent last), then by id. */
export const shotOrder = (a: Shot, b: Shot): number => a.order - b.order || cmp(a.shot_id, b.shot_id);
/** Beats of an episode by the smallest `order` of their shots, then by id. */
export const beatOrder = (a: BeatOfEpisode, b: BeatOfEpisode): number => a.order - b.order || cmp(a.id, b.id);
/** Takes oldest first (created_at), then by id. */
export const takeOrder = (a: Take, b: Take): number => cmp(a.created_at, b.created_at) || cmp(a.take_id, b.take_id);

/** The problem every entity route reports: the first in the order of a full read (shots folder, shot files by name, takes…). */
export function firstProblem(index: MutableProjectIndex): MissingCanonicalFieldDetail | null {
  return index.folderProblems.shots ?? firstError(index.shotErrors) ?? index.folderProblems.takes ?? firstError(index.takeErrors);
}

function firstError(errors: ReadonlyMap<string, MissingCanonicalFieldDetail>): MissingCanonicalFieldDetail | null {
  let first: string | null = null;
  for (const name of errors.keys()) if (first === null || name < first) first = name;
  return first === null ? null : (errors.get(first) as MissingCanonicalFieldDetail);
}

/** Whether `name` is an entity file of `shots/` or `takes/` as the service lists them (not a dot-file). */
export function isEntityFileName(name: string, ext: RegExp = /\.json$/): boolean {
  return ext.test(name) && !name.startsWith('.');
}

/**
 * The entity files of `rel` (inside `within`): names matching `ext`, no dot-files (the dispatch
 * tool's temp files), sorted so the first problem is deterministic. A missing folder has none.
 */
export function listEntityFiles(access: StoreAccess, rel: string, within: string, ext: RegExp = /\.json$/): StoreRead<StoreFolder> {
  const listed = listStoreDirSync(access, rel, within);
  if (listed.kind === 'absent') return { kind: 'ok', value: { rel, within, real: '', entries: [] } };
  if (listed.kind === 'problem') return listed;
  return { kind: 'ok', value: { ...listed.value, entries: listed.value.entries.filter((d) => isEntityFileName(d.name, ext)) } };
}

/** A parsed entity file, or why it could not be read (never its contents). */
export type Parsed = { readonly doc: Record<string, unknown> } | { readonly unreadable: string; readonly fix?: string; readonly level?: StoreFileProblem['level'] };

/** Reads `rel` as a JSON object, for the doctor; never throws (a file gone since the listing: the next change event reloads). */
export function readJson(access: StoreAccess, rel: string, within: string): Parsed {
  return parsedOf(readStoreJsonSync(access, rel, within));
}

/** A read outcome as {@link Parsed}: only a JSON object is a document. */
export function parsedOf(read: StoreRead<unknown>): Parsed {
  if (read.kind === 'absent') return { unreadable: 'no such file', fix: 'restore it', level: 'file' };
  if (read.kind === 'problem') return { unreadable: read.problem.why, fix: read.problem.fix, level: read.problem.level };
  const v = read.value;
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) return { doc: v as Record<string, unknown> };
  return { unreadable: 'not a JSON object', fix: 'make it a JSON object (see engine-format.md)', level: 'content' };
}

/** A shot file's canonical fields checked (shot_id, episode, beat_id: the first problem); shared with the doctor so both apply one rule. */
export function parseShot(projectId: string, file: string, doc: Parsed): Shot | { error: MissingCanonicalFieldDetail } {
  const where = `projects/${projectId}/shots/${file}`;
  const fail = (field: string, why?: string) => ({ error: missingField(projectId, field, where, why) });
  if ('unreadable' in doc) return { error: unreadableField(projectId, 'shot_id', where, { why: doc.unreadable, fix: doc.fix ?? 'repair it' }) };
  const d = doc.doc;
  const expected = file.slice(0, -'.json'.length);
  if (typeof d.shot_id !== 'string' || d.shot_id.length === 0) return { error: fieldProblem(projectId, 'shot_id', where, d.shot_id, 'a non-empty string') };
  if (d.shot_id !== expected) return fail('shot_id', `does not match the file name "${expected}"`);
  if (typeof d.episode !== 'number' || !Number.isInteger(d.episode)) return { error: fieldProblem(projectId, 'episode', where, d.episode, 'an integer ≥ 0') };
  if (d.episode < 0) return fail('episode', 'is not an integer ≥ 0');
  if (typeof d.beat_id !== 'string') return { error: fieldProblem(projectId, 'beat_id', where, d.beat_id, 'an identifier (a string)') };
  if (!isValidId(d.beat_id)) return fail('beat_id', 'is not a valid identifier');
  const order = typeof d.order === 'number' && Number.isFinite(d.order) ? d.order : Number.POSITIVE_INFINITY;
  return { shot_id: d.shot_id, episode: d.episode, beat_id: d.beat_id, order, raw: d };
}

/** Validates one take file's canonical fields (take_id, then shot_id); see {@link parseShot}. */
export function parseTake(projectId: string, file: string, doc: Parsed): Take | { error: MissingCanonicalFieldDetail } {
  const where = `projects/${projectId}/takes/${file}`;
  const fail = (field: string, why?: string) => ({ error: missingField(projectId, field, where, why) });
  if ('unreadable' in doc) return { error: unreadableField(projectId, 'take_id', where, { why: doc.unreadable, fix: doc.fix ?? 'repair it' }) };
  const d = doc.doc;
  const expected = file.slice(0, -'.json'.length);
  if (typeof d.take_id !== 'string' || d.take_id.length === 0) return { error: fieldProblem(projectId, 'take_id', where, d.take_id, 'a non-empty string') };
  if (d.take_id !== expected) return fail('take_id', `does not match the file name "${expected}"`);
  if (typeof d.shot_id !== 'string' || d.shot_id.length === 0) return { error: fieldProblem(projectId, 'shot_id', where, d.shot_id, 'a non-empty string') };
  const parent = typeof d.parent_take_id === 'string' && d.parent_take_id.length > 0 ? d.parent_take_id : null;
  const created = typeof d.created_at === 'string' ? d.created_at : '';
  return { take_id: d.take_id, shot_id: d.shot_id, parent_take_id: parent, created_at: created, raw: d };
}

export function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
