/**
 * Loads one project's shots and takes into an index (engine-format.md, shots/ and takes/).
 * Runs in the synthesis workers: the reads are synchronous there on purpose, since a worker
 * thread has nothing else to do and the main event loop is never touched.
 */
import fs from 'node:fs';
import path from 'node:path';
import { missingField, type MissingCanonicalFieldDetail } from './errors.js';
import { isValidId } from './ids.js';
import { projectDir, readProjectStatusSync, type ProjectStatus } from './project-file.js';

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

const EMPTY_INDEX = {
  invalid: null,
  episodes: new Map(),
  shotsByBeat: new Map(),
  takesByShot: new Map(),
  takes: new Map(),
  shotCount: 0,
  takeCount: 0,
} as const;

/**
 * Reads the project `id` under `root`. Never throws for store content: problems are reported
 * through `status` (legacy, invalid, absent) and `invalid` (a shot or take file).
 */
export function loadProjectIndex(root: string, id: string): ProjectIndex {
  const status = readProjectStatusSync(root, id);
  if (status.kind !== 'ok') return { status, ...EMPTY_INDEX };
  const dir = projectDir(root, id);
  const shots: Shot[] = [];
  const takes: Take[] = [];
  let invalid: MissingCanonicalFieldDetail | null = null;

  for (const file of listEntityFiles(path.join(dir, 'shots'))) {
    const r = parseShot(id, file, readJson(path.join(dir, 'shots', file)));
    if ('error' in r) {
      invalid ??= r.error;
      continue;
    }
    shots.push(r);
  }
  for (const file of listEntityFiles(path.join(dir, 'takes'))) {
    const r = parseTake(id, file, readJson(path.join(dir, 'takes', file)));
    if ('error' in r) {
      invalid ??= r.error;
      continue;
    }
    takes.push(r);
  }

  shots.sort((a, b) => a.order - b.order || cmp(a.shot_id, b.shot_id));
  const shotsByBeat = new Map<string, Shot[]>();
  const byEpisode = new Map<number, Map<string, Shot[]>>();
  for (const s of shots) {
    push(shotsByBeat, s.beat_id, s);
    let beats = byEpisode.get(s.episode);
    if (!beats) byEpisode.set(s.episode, (beats = new Map()));
    push(beats, s.beat_id, s);
  }
  const episodes = new Map<string, EpisodeOfProject>();
  for (const number of [...byEpisode.keys()].sort((a, b) => a - b)) {
    const beats = [...(byEpisode.get(number) as Map<string, Shot[]>)]
      .map(([beatId, list]) => ({ id: beatId, episode: number, order: (list[0] as Shot).order, shots: list }))
      .sort((a, b) => a.order - b.order || cmp(a.id, b.id));
    episodes.set(String(number), { number, beats });
  }

  takes.sort((a, b) => cmp(a.created_at, b.created_at) || cmp(a.take_id, b.take_id));
  const takesByShot = new Map<string, Take[]>();
  const takeMap = new Map<string, Take>();
  for (const t of takes) {
    push(takesByShot, t.shot_id, t);
    takeMap.set(t.take_id, t);
  }
  return {
    status,
    invalid,
    episodes,
    shotsByBeat,
    takesByShot,
    takes: takeMap,
    shotCount: shots.length,
    takeCount: takes.length,
  };
}

/**
 * Entity file names in `dir` as the service lists them: names matching `ext` (default
 * `.json`), never dot-files (the dispatch tool's temp files), sorted so that the first
 * reported problem is deterministic. A missing folder has none.
 */
export function listEntityFiles(dir: string, ext: RegExp = /\.json$/): string[] {
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names.filter((n) => ext.test(n) && !n.startsWith('.')).sort();
}

/** A parsed entity file, or why it could not be read. */
export type Parsed = { readonly doc: Record<string, unknown> } | { readonly unreadable: string };

/** Reads an entity file as a JSON object (exported for the engine CLI's doctor). Never throws. */
export function readJson(file: string): Parsed {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    // Removed between readdir and read: treat as unreadable, the next change event reloads.
    return { unreadable: (err as Error).message };
  }
  try {
    const v = JSON.parse(text) as unknown;
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) return { doc: v as Record<string, unknown> };
    return { unreadable: 'not a JSON object' };
  } catch (err) {
    return { unreadable: (err as Error).message };
  }
}

/**
 * Validates one shot file's canonical fields (engine-format.md, shots/): the first problem found,
 * in the order shot_id, episode, beat_id, as a MissingCanonicalField detail. Exported so the
 * engine CLI's doctor applies exactly the service's rules.
 */
export function parseShot(projectId: string, file: string, doc: Parsed): Shot | { error: MissingCanonicalFieldDetail } {
  const where = `projects/${projectId}/shots/${file}`;
  const fail = (field: string, why?: string) => ({ error: missingField(projectId, field, where, why) });
  if ('unreadable' in doc) return fail('shot_id', `cannot be read (${doc.unreadable})`);
  const d = doc.doc;
  const expected = file.slice(0, -'.json'.length);
  if (typeof d.shot_id !== 'string' || d.shot_id.length === 0) return fail('shot_id');
  if (d.shot_id !== expected) return fail('shot_id', `does not match the file name "${expected}"`);
  if (typeof d.episode !== 'number' || !Number.isInteger(d.episode) || d.episode < 0) {
    return fail('episode', d.episode === undefined ? undefined : 'is not an integer ≥ 0');
  }
  if (!isValidId(d.beat_id)) return fail('beat_id', d.beat_id === undefined ? undefined : 'is not a valid identifier');
  const order = typeof d.order === 'number' && Number.isFinite(d.order) ? d.order : Number.POSITIVE_INFINITY;
  return { shot_id: d.shot_id, episode: d.episode, beat_id: d.beat_id, order, raw: d };
}

/** Validates one take file's canonical fields (take_id, then shot_id); see {@link parseShot}. */
export function parseTake(projectId: string, file: string, doc: Parsed): Take | { error: MissingCanonicalFieldDetail } {
  const where = `projects/${projectId}/takes/${file}`;
  const fail = (field: string, why?: string) => ({ error: missingField(projectId, field, where, why) });
  if ('unreadable' in doc) return fail('take_id', `cannot be read (${doc.unreadable})`);
  const d = doc.doc;
  const expected = file.slice(0, -'.json'.length);
  if (typeof d.take_id !== 'string' || d.take_id.length === 0) return fail('take_id');
  if (d.take_id !== expected) return fail('take_id', `does not match the file name "${expected}"`);
  if (typeof d.shot_id !== 'string' || d.shot_id.length === 0) return fail('shot_id');
  const parent = typeof d.parent_take_id === 'string' && d.parent_take_id.length > 0 ? d.parent_take_id : null;
  const created = typeof d.created_at === 'string' ? d.created_at : '';
  return { take_id: d.take_id, shot_id: d.shot_id, parent_take_id: parent, created_at: created, raw: d };
}

function push<K, V>(m: Map<K, V[]>, k: K, v: V): void {
  const list = m.get(k);
  if (list) list.push(v);
  else m.set(k, [v]);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
