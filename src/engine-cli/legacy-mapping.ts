/**
 * How a legacy (format 1) file maps to format 2: the table in README ("Engine doctor and
 * migrate"), decided from the bundled `sample-store/projects/old-pilot/`. A legacy member used for
 * a format-2 one is renamed, not kept twice; every other member passes through untouched.
 */
import { isValidId } from '../engine/ids.js';
import { titleFromId } from './findings.js';

/** A mapped file: the format-2 document, one note per decision, and the problems that stop it (each names the member to add). */
export interface Mapped {
  readonly doc: Record<string, unknown>;
  /** One note per decision, e.g. `scene 1 → beat_id "scene-1"`. */
  readonly notes: string[];
  /** Non-empty when the file cannot be migrated; each names the member to add. */
  readonly problems: string[];
}

/** Maps a legacy project document of directory `id`. */
export function mapProject(id: string, src: Readonly<Record<string, unknown>>): Mapped {
  const rest = { ...src };
  const notes: string[] = [];
  const problems: string[] = [];
  const format = take(rest, ['format']);
  notes.push(format ? `format ${JSON.stringify(format.value)} → 2` : 'format 2');
  const legacyId = take(rest, ['id', 'project_id']);
  if (!legacyId) notes.push(`id ${JSON.stringify(id)} from the directory name`);
  else if (legacyId.value !== id) notes.push(`${legacyId.name} ${JSON.stringify(legacyId.value)} replaced by the directory name ${JSON.stringify(id)}`);
  else if (legacyId.name !== 'id') notes.push(`${legacyId.name} → id`);
  let title = take(rest, ['title', 'name']);
  if (title && (typeof title.value !== 'string' || title.value.trim() === '')) {
    notes.push(`${title.name} ${JSON.stringify(title.value)} is not a usable title`);
    title = null;
  }
  let titleValue: string;
  if (title) {
    titleValue = title.value as string;
    if (title.name !== 'title') notes.push(`${title.name} → title`);
  } else {
    titleValue = titleFromId(id);
    notes.push(`title ${JSON.stringify(titleValue)} from the id: a placeholder, replace it`);
  }
  const created = renamed(rest, 'created_at', ['created_at', 'created'], notes);
  return { doc: { format: 2, id, title: titleValue, ...created, ...rest }, notes, problems };
}

/** Maps a legacy shot document read from a file whose name without extension is `stem`. */
export function mapShot(stem: string, src: Readonly<Record<string, unknown>>): Mapped & { readonly id: string | null } {
  const rest = { ...src };
  const notes: string[] = [];
  const problems: string[] = [];
  const id = idFrom(rest, 'shot_id', ['shot_id', 'shot', 'id'], stem, notes, problems);

  let episode: number | null = null;
  const ep = take(rest, ['episode']);
  if (ep) {
    episode = integer(ep.value);
    if (episode === null || episode < 0) problems.push(`"episode" must be an integer ≥ 0 (found ${JSON.stringify(ep.value)})`);
  } else {
    episode = 1;
    notes.push('episode 1 (format 1 has no episodes: a legacy project is one episode)');
  }

  let beat: string | null = null;
  const b = take(rest, ['beat_id', 'beat']);
  if (b) {
    beat = typeof b.value === 'string' ? b.value : null;
    if (b.name !== 'beat_id') notes.push(`${b.name} → beat_id`);
  } else {
    const scene = take(rest, ['scene']);
    if (scene && (typeof scene.value === 'string' || typeof scene.value === 'number')) {
      beat = `scene-${scene.value}`;
      notes.push(`scene ${JSON.stringify(scene.value)} → beat_id ${JSON.stringify(beat)}`);
    } else if (!scene) {
      problems.push('no "scene" (or "beat_id"): add `scene: <number>` to it');
    } else {
      problems.push(`"scene" must be a number or a name (found ${JSON.stringify(scene.value)})`);
    }
  }
  if (beat !== null && !isValidId(beat)) {
    problems.push(`beat ${JSON.stringify(beat)} is not a valid identifier (letters, digits, '.', '_', '-')`);
  }
  return { id, doc: { shot_id: id, episode, beat_id: beat, ...rest }, notes, problems };
}

/** Maps a legacy take document read from a file whose name without extension is `stem`. */
export function mapTake(stem: string, src: Readonly<Record<string, unknown>>): Mapped & { readonly id: string | null } {
  const rest = { ...src };
  const notes: string[] = [];
  const problems: string[] = [];
  const id = idFrom(rest, 'take_id', ['take_id', 'take', 'id'], stem, notes, problems);
  const shot = take(rest, ['shot_id', 'shot']);
  let shotId: string | null = null;
  if (!shot) problems.push('no "shot" (or "shot_id"): add the id of the take\'s shot');
  else {
    shotId = typeof shot.value === 'number' ? String(shot.value) : typeof shot.value === 'string' ? shot.value : null;
    if (shotId === null || !isValidId(shotId)) problems.push(`shot ${JSON.stringify(shot.value)} is not a valid identifier`);
    else if (shot.name !== 'shot_id') notes.push(`${shot.name} → shot_id`);
  }
  const parent = renamed(rest, 'parent_take_id', ['parent_take_id', 'parent_take', 'parent'], notes);
  const created = renamed(rest, 'created_at', ['created_at', 'created'], notes);
  return { id, doc: { take_id: id, shot_id: shotId, ...parent, ...created, ...rest }, notes, problems };
}

/** Removes the first of `names` present in `rest` (not undefined) and returns its name and value. */
function take(rest: Record<string, unknown>, names: readonly string[]): { name: string; value: unknown } | null {
  for (const name of names) {
    if (Object.hasOwn(rest, name) && rest[name] !== undefined) {
      const value = rest[name];
      for (const n of names) delete rest[n];
      return { name, value };
    }
  }
  return null;
}

/** `{ [to]: value }` from the first of `names`, noting a rename; `{}` when none is present. */
function renamed(rest: Record<string, unknown>, to: string, names: readonly string[], notes: string[]): Record<string, unknown> {
  const found = take(rest, names);
  if (!found) return {};
  if (found.name !== to) notes.push(`${found.name} → ${to}`);
  return { [to]: found.value };
}

function idFrom(rest: Record<string, unknown>, to: string, names: readonly string[], stem: string, notes: string[], problems: string[]): string | null {
  const found = take(rest, names);
  let id: string | null;
  if (!found) {
    id = stem;
    notes.push(`${to} ${JSON.stringify(stem)} from the file name`);
  } else {
    id = typeof found.value === 'string' ? found.value : typeof found.value === 'number' ? String(found.value) : null;
    if (found.name !== to) notes.push(`${found.name} → ${to}`);
  }
  if (id === null || !isValidId(id)) {
    problems.push(`${found?.name ?? to} ${JSON.stringify(found?.value ?? stem)} is not a valid identifier`);
    return null;
  }
  return id;
}

function integer(v: unknown): number | null {
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  if (typeof v === 'string' && /^\d+$/.test(v.trim())) return Number(v.trim());
  return null;
}
