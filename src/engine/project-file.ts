/** Classifies a project directory (engine-format.md §project.json, §Legacy format): format 2, legacy, missing a field, or absent. */
import path from 'node:path';
import { fieldProblem, missingField, unreadableField, type MissingCanonicalFieldDetail } from './errors.js';
import { checkStoreFileSync, readStoreJsonSync, DEFAULT_STORE_JSON_MAX_DEPTH, type StoreAccess } from './read-store-file.js';
import { parseStoreJson } from './store-json.js';
import type { StoreRead } from './store-read.js';

export type ProjectStatus =
  | { readonly kind: 'ok'; readonly id: string; readonly project: Readonly<Record<string, unknown>> }
  | { readonly kind: 'legacy'; readonly id: string; readonly reason: string }
  | { readonly kind: 'invalid'; readonly id: string; readonly detail: MissingCanonicalFieldDetail }
  | { readonly kind: 'absent'; readonly id: string };

/** The format this service reads. */
export const CURRENT_FORMAT = 2;

export function projectDir(root: string, id: string): string {
  return path.join(root, 'projects', id);
}

/** Classification from project.json's text (null: absent), for the engine CLI; `maxDepth` is CONSOLE_STORE_JSON_MAX_DEPTH. */
export function classifyProject(id: string, json: string | null, hasYaml: boolean, maxDepth = DEFAULT_STORE_JSON_MAX_DEPTH): ProjectStatus {
  return classifyProjectRead(id, json === null ? { kind: 'absent' } : parseStoreJson(json, maxDepth), hasYaml);
}

/** Pure classification from the read of project.json; `hasYaml` matters only when it is absent. */
export function classifyProjectRead(id: string, read: StoreRead<unknown>, hasYaml: boolean): ProjectStatus {
  if (read.kind === 'absent') {
    return hasYaml ? { kind: 'legacy', id, reason: 'format 1 (project.yaml)' } : { kind: 'absent', id };
  }
  const where = `projects/${id}/project.json`;
  if (read.kind === 'problem') return { kind: 'invalid', id, detail: unreadableField(id, 'format', where, read.problem) };
  const doc = read.value;
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return { kind: 'invalid', id, detail: unreadableField(id, 'format', where, { why: 'not a JSON object', fix: 'make it a JSON object (see engine-format.md)' }) };
  }
  const p = doc as Record<string, unknown>;
  if (typeof p.format !== 'number' || !Number.isInteger(p.format)) {
    return { kind: 'invalid', id, detail: fieldProblem(id, 'format', where, p.format, 'an integer') };
  }
  if (p.format < CURRENT_FORMAT) return { kind: 'legacy', id, reason: `format ${p.format}` };
  if (typeof p.id !== 'string' || p.id.length === 0) return { kind: 'invalid', id, detail: fieldProblem(id, 'id', where, p.id, 'a non-empty string') };
  if (p.id !== id) {
    // Not quoted: no error message carries a file's contents.
    return { kind: 'invalid', id, detail: missingField(id, 'id', where, `does not match the directory name "${id}"`) };
  }
  if (typeof p.title !== 'string' || p.title.length === 0) {
    return { kind: 'invalid', id, detail: fieldProblem(id, 'title', where, p.title, 'a non-empty string') };
  }
  return { kind: 'ok', id, project: p };
}

/** Reads and classifies project `id` (already a valid id) synchronously, for workers and the CLI; never throws for store content. */
export function readProjectStatusSync(access: StoreAccess, id: string): ProjectStatus {
  const within = `projects/${id}`;
  const json = readStoreJsonSync(access, `${within}/project.json`, within);
  const hasYaml = json.kind === 'absent' && checkStoreFileSync(access, `${within}/project.yaml`, within).kind !== 'absent';
  return classifyProjectRead(id, json, hasYaml);
}
