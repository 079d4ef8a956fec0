import { access } from 'node:fs/promises';
import path from 'node:path';
import { DispatchError } from './errors.js';
import { isNotFound, readJsonObject } from './read-json.js';

/** A format-2 project that the tool may write into. `dir` is absolute. */
export interface ProjectRef {
  id: string;
  dir: string;
}

/**
 * Opens `projects/<projectId>/` (checked id; engine-format.md §project.json). @throws DispatchError (exit 2) for an unknown or
 * legacy project or a missing/mistyped canonical field; Error (exit 1) when `project.json` is unreadable or not an object.
 */
export async function loadProject(storeRoot: string, projectId: string): Promise<ProjectRef> {
  const dir = path.join(storeRoot, 'projects', projectId);
  let project: Awaited<ReturnType<typeof readJsonObject>>;
  try {
    project = await readJsonObject(path.join(dir, 'project.json'));
  } catch (error) {
    if (!isNotFound(error)) throw error;
    if (await exists(path.join(dir, 'project.yaml'))) {
      throw new DispatchError(`legacy project ${projectId}: format 1 (project.yaml)`);
    }
    throw new DispatchError(`unknown project ${projectId}`);
  }
  // Checked in the same order as the read routes, so both name the same field.
  for (const field of ['format', 'id', 'title'] as const) {
    if (project[field] === undefined || project[field] === null) {
      throw new DispatchError(`project ${projectId}: missing canonical field ${field}`);
    }
  }
  // A format of another type is a mistake in the file, not a legacy format.
  if (typeof project.format !== 'number') {
    throw new DispatchError(`project ${projectId}: canonical field format has the wrong type (${Array.isArray(project.format) ? 'an array' : `a ${typeof project.format}`}, expected an integer)`);
  }
  if (project.format < 2) {
    throw new DispatchError(`legacy project ${projectId}: format ${String(project.format)}`);
  }
  if (project.id !== projectId) {
    throw new DispatchError(`project ${projectId}: missing canonical field id`);
  }
  return { id: projectId, dir };
}

async function exists(file: string): Promise<boolean> {
  try {
    await access(file);
    return true;
  } catch (error) {
    if (isNotFound(error)) return false;
    throw error;
  }
}
