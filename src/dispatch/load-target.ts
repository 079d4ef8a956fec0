import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { DispatchError } from './errors.js';
import type { ProjectRef } from './load-project.js';
import { isNotFound, readJsonObject, type JsonObject } from './read-json.js';
import { compareTakeIds } from './take-ids.js';

/** A shot file's members (engine-format.md §shots/<shot_id>.json). */
export interface Shot extends JsonObject {
  shot_id: string;
  episode: number;
  beat_id: string;
}

/** A take file's members (engine-format.md §takes/<take_id>.json). */
export interface Take extends JsonObject {
  take_id: string;
  shot_id: string;
}

/** What a run works on: the shot and its newest take (null for a first take). */
export type Target = { kind: 'shot'; shot: Shot; parent: Take | null } | { kind: 'nothing_to_do' };

/** Receives one warning line (without the `warning: ` prefix). */
export type Warn = (message: string) => void;

/**
 * The shot a run renders: `shotId`, else the first shot without a take (episode, `order`, `shot_id`),
 * invalid files skipped with a warning; its newest take is the parent. @throws DispatchError (exit 2) for a bad named shot.
 */
export async function loadTarget(project: ProjectRef, shotId: string | null, warn: Warn): Promise<Target> {
  const takes = await loadTakes(project.dir, warn);
  let shot: Shot;
  if (shotId !== null) {
    shot = await loadNamedShot(project, shotId);
  } else {
    const taken = new Set(takes.map((take) => take.shot_id));
    const open = (await loadShots(project.dir, warn)).filter((s) => !taken.has(s.shot_id)).sort(compareShots);
    if (open[0] === undefined) return { kind: 'nothing_to_do' };
    shot = open[0];
  }
  const ofShot = takes.filter((take) => take.shot_id === shot.shot_id).sort(compareTakesByAge);
  return { kind: 'shot', shot, parent: ofShot.at(-1) ?? null };
}

async function loadNamedShot(project: ProjectRef, shotId: string): Promise<Shot> {
  let data: JsonObject;
  try {
    data = await readJsonObject(path.join(project.dir, 'shots', `${shotId}.json`));
  } catch (error) {
    if (isNotFound(error)) throw new DispatchError(`unknown shot ${shotId} in project ${project.id}`);
    throw new DispatchError(`shot ${shotId}: ${error instanceof Error ? error.message : String(error)}`);
  }
  const problem = checkShot(data, shotId);
  if (problem !== null) throw new DispatchError(`shot ${shotId}: ${problem}`);
  return data as Shot;
}

async function loadShots(projectDir: string, warn: Warn): Promise<Shot[]> {
  const shots: Shot[] = [];
  for (const [name, data] of await readJsonDir(path.join(projectDir, 'shots'), warn)) {
    const problem = checkShot(data, name);
    if (problem === null) shots.push(data as Shot);
    else warn(`skipping shot file ${name}.json: ${problem}`);
  }
  return shots;
}

async function loadTakes(projectDir: string, warn: Warn): Promise<Take[]> {
  const takes: Take[] = [];
  for (const [name, data] of await readJsonDir(path.join(projectDir, 'takes'), warn)) {
    const missing = data.take_id !== name ? 'take_id' : typeof data.shot_id !== 'string' ? 'shot_id' : null;
    if (missing === null) takes.push(data as Take);
    else warn(`skipping take file ${name}.json: missing canonical field ${missing}`);
  }
  return takes;
}

function checkShot(data: JsonObject, fileId: string): string | null {
  if (data.shot_id !== fileId) return 'missing canonical field shot_id';
  const episode = data.episode;
  if (typeof episode !== 'number' || !Number.isInteger(episode) || episode < 0) {
    return 'missing canonical field episode';
  }
  if (typeof data.beat_id !== 'string') return 'missing canonical field beat_id';
  return null;
}

/** Every `*.json` file of a directory as [name without `.json`, object]; dot files are takes still being written. */
async function readJsonDir(dir: string, warn: Warn): Promise<Array<[string, JsonObject]>> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
  const entries: Array<[string, JsonObject]> = [];
  for (const name of names.sort()) {
    if (name.startsWith('.') || !name.endsWith('.json')) continue;
    try {
      entries.push([name.slice(0, -'.json'.length), await readJsonObject(path.join(dir, name))]);
    } catch (error) {
      // A take removed between readdir and read is not worth a warning.
      if (!isNotFound(error)) warn(`skipping ${name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  return entries;
}

function compareShots(a: Shot, b: Shot): number {
  const orderOf = (s: Shot): number => (typeof s.order === 'number' ? s.order : Infinity);
  // Infinity - Infinity is NaN, which `||` skips like 0: two unordered shots tie on order.
  return a.episode - b.episode || orderOf(a) - orderOf(b) || (a.shot_id < b.shot_id ? -1 : a.shot_id > b.shot_id ? 1 : 0);
}

/** Oldest first. Compared as instants, not strings: `…00Z` and `…00.500Z` sort wrongly as text. */
function compareTakesByAge(a: Take, b: Take): number {
  const timeOf = (t: Take): number => {
    const ms = typeof t.created_at === 'string' ? Date.parse(t.created_at) : NaN;
    return Number.isNaN(ms) ? -Infinity : ms;
  };
  const ta = timeOf(a);
  const tb = timeOf(b);
  if (ta !== tb) return ta < tb ? -1 : 1;
  return compareTakeIds(a.take_id, b.take_id);
}
