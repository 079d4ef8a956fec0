/**
 * Classifies a project directory of the engine store (engine-format.md, project.json and
 * "Legacy format"): format 2 and complete, legacy, missing a canonical field, or absent.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { missingField, type MissingCanonicalFieldDetail } from './errors.js';

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

/**
 * Pure classification from the files' contents.
 * @param json text of project.json, or null when the file does not exist.
 * @param hasYaml whether project.yaml exists.
 */
export function classifyProject(id: string, json: string | null, hasYaml: boolean): ProjectStatus {
  if (json === null) {
    return hasYaml ? { kind: 'legacy', id, reason: 'format 1 (project.yaml)' } : { kind: 'absent', id };
  }
  const where = `projects/${id}/project.json`;
  let doc: unknown;
  try {
    doc = JSON.parse(json);
  } catch (err) {
    return { kind: 'invalid', id, detail: missingField(id, 'format', where, `cannot be read (${(err as Error).message})`) };
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    return { kind: 'invalid', id, detail: missingField(id, 'format', where, 'cannot be read (not a JSON object)') };
  }
  const p = doc as Record<string, unknown>;
  if (typeof p.format !== 'number' || !Number.isInteger(p.format)) {
    return { kind: 'invalid', id, detail: missingField(id, 'format', where) };
  }
  if (p.format < CURRENT_FORMAT) return { kind: 'legacy', id, reason: `format ${p.format}` };
  if (typeof p.id !== 'string' || p.id.length === 0) return { kind: 'invalid', id, detail: missingField(id, 'id', where) };
  if (p.id !== id) {
    return {
      kind: 'invalid',
      id,
      detail: missingField(id, 'id', where, `does not match the directory name "${id}" (found "${p.id}")`),
    };
  }
  if (typeof p.title !== 'string' || p.title.length === 0) {
    return { kind: 'invalid', id, detail: missingField(id, 'title', where) };
  }
  return { kind: 'ok', id, project: p };
}

/** Reads and classifies a project (async; main thread). `id` must already be a valid identifier. */
export async function readProjectStatus(root: string, id: string): Promise<ProjectStatus> {
  const dir = projectDir(root, id);
  const json = await fsp.readFile(path.join(dir, 'project.json'), 'utf8').catch(enoentToNull);
  const hasYaml = json === null && (await exists(path.join(dir, 'project.yaml')));
  return classifyProject(id, json, hasYaml);
}

/** Reads and classifies a project (sync; worker threads). */
export function readProjectStatusSync(root: string, id: string): ProjectStatus {
  const dir = projectDir(root, id);
  let json: string | null;
  try {
    json = fs.readFileSync(path.join(dir, 'project.json'), 'utf8');
  } catch (err) {
    json = enoentToNull(err);
  }
  const hasYaml = json === null && fs.existsSync(path.join(dir, 'project.yaml'));
  return classifyProject(id, json, hasYaml);
}

function enoentToNull(err: unknown): null {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EISDIR') return null;
  throw err;
}

async function exists(file: string): Promise<boolean> {
  try {
    await fsp.access(file);
    return true;
  } catch {
    return false;
  }
}
