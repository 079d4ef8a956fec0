/** The store reads the main thread needs, run in the worker pool and answered as ready JSON bytes, so the event loop never reads or parses a store file. */
import { fieldProblem, missingField, unreadableField, type MissingCanonicalFieldDetail } from './errors.js';
import { isValidId } from './ids.js';
import { readProjectStatusSync } from './project-file.js';
import { parsedOf, type Parsed } from './project-index.js';
import { checkStoreFileSync, listStoreDirSync, readFolderEntryJsonSync, readStoreJsonSync, type StoreAccess } from './read-store-file.js';
import type { StoreFileProblem } from './store-read.js';

/** A project: served (`Ok` locates its JSON bytes), else why not (engine-format.md §Legacy format). */
export type ProjectEntry<Ok = { readonly body: Uint8Array }> =
  | ({ readonly kind: 'ok'; readonly id: string } & Ok)
  | { readonly kind: 'legacy'; readonly id: string; readonly reason: string }
  | { readonly kind: 'invalid'; readonly id: string; readonly detail: MissingCanonicalFieldDetail };

/** The store's projects: `body` is `GET /api/projects`'s array, each served project a byte range of it (nothing copied); `problem` when `projects/` cannot be listed. */
export interface ProjectListing {
  readonly entries: readonly ProjectEntry<{ readonly start: number; readonly end: number }>[];
  readonly body: Uint8Array;
  readonly problem: StoreFileProblem | null;
}

/** A memory entry file left out of `GET /api/memory` (`name` in `memory/`), and why. */
export interface SkippedMemoryEntry {
  /** The file's name in `memory/`. */
  readonly name: string;
  readonly detail: MissingCanonicalFieldDetail;
}

/** `GET /api/memory`'s body and the skipped entries, or the problem of an unlistable `memory/` (422). */
export type MemoryListing = { readonly ok: true; readonly body: Uint8Array; readonly skipped: readonly SkippedMemoryEntry[] } | { readonly ok: false; readonly detail: MissingCanonicalFieldDetail };

/** A take file for take actions: absent; present with its shot id (null, with a reason, if not a take); or unusable (422). */
export type TakeFileRead =
  | { readonly onDisk: false }
  | { readonly onDisk: true; readonly shotId: string | null; readonly unreadable: MissingCanonicalFieldDetail | null }
  | { readonly onDisk: 'unusable'; readonly detail: MissingCanonicalFieldDetail };

/** A memory entry file as toggles need it: there (a usable regular file), absent, or unusable (422). */
export type MemoryEntryCheck = { readonly kind: 'present' } | { readonly kind: 'absent' } | { readonly kind: 'unusable'; readonly detail: MissingCanonicalFieldDetail };

const encoder = new TextEncoder();

/** Every valid-id real folder under `projects/`, classified; an unusable project file affects no other. */
export function listProjectsSync(access: StoreAccess): ProjectListing {
  const dir = listStoreDirSync(access, 'projects', 'projects');
  if (dir.kind !== 'ok') return { entries: [], body: encoder.encode('[]'), problem: dir.kind === 'problem' ? dir.problem : null };
  const entries: ProjectEntry<{ start: number; end: number }>[] = [];
  const texts: string[] = [];
  let at = 1; // after '['
  for (const d of dir.value.entries) {
    // A name that is not an id cannot be addressed: ignored, as a dot-folder is.
    if (!d.isDirectory() || !isValidId(d.name)) continue;
    const s = readProjectStatusSync(access, d.name);
    if (s.kind === 'absent') continue;
    if (s.kind !== 'ok') {
      entries.push(s);
      continue;
    }
    const text = JSON.stringify(s.project);
    if (texts.length > 0) at += 1; // ','
    const end = at + Buffer.byteLength(text);
    entries.push({ kind: 'ok', id: s.id, start: at, end });
    texts.push(text);
    at = end;
  }
  return { entries, body: encoder.encode(`[${texts.join(',')}]`), problem: null };
}

/** One project, by a valid id (checked by the caller). */
export function readProjectSync(access: StoreAccess, id: string): ProjectEntry | { readonly kind: 'absent'; readonly id: string } {
  const s = readProjectStatusSync(access, id);
  return s.kind === 'ok' ? { kind: 'ok', id, body: encoder.encode(JSON.stringify(s.project)) } : s;
}

/**
 * The memory entries of `memory/` by file name, `enabled` from `toggles` (by entry id), else the
 * file, else true. An unusable entry file is left out and listed in `skipped`, as a broken project
 * is left out of the project list: one bad file never fails the whole list.
 */
export function listMemorySync(access: StoreAccess, toggles: Readonly<Record<string, boolean>>): MemoryListing {
  const dir = listStoreDirSync(access, 'memory', 'memory');
  if (dir.kind === 'absent') return { ok: true, body: encoder.encode('[]'), skipped: [] };
  if (dir.kind === 'problem') return { ok: false, detail: unreadableField(null, 'id', 'memory', dir.problem) };
  const out: unknown[] = [];
  const skipped: SkippedMemoryEntry[] = [];
  for (const d of dir.value.entries) {
    const name = d.name;
    if (!name.endsWith('.json') || name.startsWith('.')) continue;
    const read = readFolderEntryJsonSync(access, dir.value, d);
    if (read.kind === 'absent') continue; // removed since the listing
    const parsed = parseMemoryEntry(name, parsedOf(read));
    if ('error' in parsed) {
      skipped.push({ name, detail: parsed.error });
      continue;
    }
    const doc = parsed.doc;
    const toggled = Object.hasOwn(toggles, doc.id) ? toggles[doc.id] : undefined;
    const enabled = toggled ?? (typeof doc.enabled === 'boolean' ? doc.enabled : true);
    out.push({ ...doc, enabled });
  }
  return { ok: true, body: encoder.encode(JSON.stringify(out)), skipped };
}

/** One memory file's canonical fields (`id`, the file name without `.json`, then `text`): the entry, or the first problem, whose `project_id` is the entry's own; shared with the doctor. */
export function parseMemoryEntry(
  name: string,
  read: Parsed,
): { readonly doc: Record<string, unknown> & { readonly id: string; readonly text: string } } | { readonly error: MissingCanonicalFieldDetail } {
  const where = `memory/${name}`;
  const expected = name.slice(0, -'.json'.length);
  if ('unreadable' in read) return { error: unreadableField(null, 'id', where, { why: read.unreadable, fix: read.fix ?? 'repair it' }) };
  const doc = read.doc;
  const projectId = typeof doc.project_id === 'string' ? doc.project_id : null;
  if (typeof doc.id !== 'string') return { error: fieldProblem(projectId, 'id', where, doc.id, 'a string: the file name without .json') };
  if (doc.id !== expected) return { error: missingField(projectId, 'id', where, `does not match the file name "${expected}"`) };
  if (typeof doc.text !== 'string') return { error: fieldProblem(projectId, 'text', where, doc.text, 'a string') };
  return { doc: doc as Record<string, unknown> & { id: string; text: string } };
}

/** `projects/<projectId>/takes/<takeId>.json` for a take action ("the take id is on disk"); ids checked by the caller. */
export function readTakeFileSync(access: StoreAccess, projectId: string, takeId: string): TakeFileRead {
  const within = `projects/${projectId}`;
  const where = `${within}/takes/${takeId}.json`;
  const read = readStoreJsonSync(access, where, within);
  if (read.kind === 'absent') return { onDisk: false };
  if (read.kind === 'problem' && read.problem.level === 'file') return { onDisk: 'unusable', detail: unreadableField(projectId, 'shot_id', where, read.problem) };
  // Contents that are not a take (syntax, depth, no object): on disk, without a shot.
  const parsed = parsedOf(read);
  if ('unreadable' in parsed) {
    return { onDisk: true, shotId: null, unreadable: unreadableField(projectId, 'shot_id', where, { why: parsed.unreadable, fix: parsed.fix ?? 'repair it' }) };
  }
  const shot = parsed.doc.shot_id;
  return { onDisk: true, shotId: typeof shot === 'string' ? shot : null, unreadable: null };
}

/** `memory/<entryId>.json` for a toggle: there, absent, or unusable (not regular, outside, too large). */
export function checkMemoryEntrySync(access: StoreAccess, entryId: string): MemoryEntryCheck {
  const where = `memory/${entryId}.json`;
  const r = checkStoreFileSync(access, where, 'memory');
  if (r.kind === 'ok') return { kind: 'present' };
  if (r.kind === 'absent') return { kind: 'absent' };
  return { kind: 'unusable', detail: unreadableField(null, 'id', where, r.problem) };
}
